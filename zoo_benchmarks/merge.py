"""`zoo benchmark all --only SECTION ...`: some sections measured again, merged into the file.

A whole `zoo benchmark all` takes most of an hour on 2 cores; a change to one part of zoo
needs only its sections again. The sections run are written into the existing markdown file
(--out), each marked "(a separate run)" with a line naming the machine, the date and the
command, since they may come from another machine than the file's header names: in place of
an earlier separate run's section of the same heading, after the file's own run's section
of that heading (which stays: it may hold rows the new run did not measure), or at the end.
Their target rows replace the rows of the same comparison in the Targets table (or are added
to it), the run's date beside the ratio.
"""

import re


def _key(heading):
    """A section heading's identity: its words before the colon, without the marks added
    here ("## Serving: raw text ... (a separate run)" -> "## Serving")."""
    return heading.split(":", 1)[0].replace(" (a separate run)", "").strip()


def split_sections(text):
    """(head, sections): the lines before the first "## " heading after the Targets table,
    and the list of sections, each a list of lines starting with its "## " heading."""
    lines = text.rstrip("\n").split("\n")
    sections, head = [], []
    for line in lines:
        if line.startswith("## ") and not line.startswith("## Targets"):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
        else:
            head.append(line)
    return head, sections


def merge(text, outputs, machine, date, command):
    """The markdown file `text` with the sections of `outputs` (a list of (lines, summary),
    as the section functions return them) in place of those of the same heading.

    Examples:
        >>> old = "# B\\n\\n## Targets (issue #10)\\n\\n| comparison | ratio |\\n| --- | --- |\\n"
        >>> old += "| a vs b | 1.0 (no target) |\\n\\n## Serving: old\\n\\nold table\\n"
        >>> new = [(["## Serving: new", "", "new table"], [("a vs b", "2.0 (no target)")])]
        >>> print(merge(old, new, "CPU X", "2026-11-27", "zoo benchmark all --only serving"))
        # B
        <BLANKLINE>
        ## Targets (issue #10)
        <BLANKLINE>
        | comparison | ratio |
        | --- | --- |
        | a vs b | 2.0 (no target); a separate run, 2026-11-27 |
        <BLANKLINE>
        ## Serving: old
        <BLANKLINE>
        old table
        <BLANKLINE>
        ## Serving: new (a separate run)
        <BLANKLINE>
        Measured on: CPU X; 2026-11-27, `zoo benchmark all --only serving`.
        <BLANKLINE>
        new table
        <BLANKLINE>
    """
    head, sections = split_sections(text)
    rows = {what: f"{value}; a separate run, {date}" for _, summary in outputs
            for what, value in summary}
    merged_head, seen = [], set()
    for line in head:
        cells = re.match(r"\| (.+?) \| (.+) \|$", line)
        if cells and cells.group(1) in rows:
            seen.add(cells.group(1))
            line = f"| {cells.group(1)} | {rows[cells.group(1)]} |"
        merged_head.append(line)
    added = [f"| {what} | {value} |" for what, value in rows.items() if what not in seen]
    if added:  # after the table's last row
        last = max(i for i, line in enumerate(merged_head) if line.startswith("| "))
        merged_head[last + 1:last + 1] = added
    for lines, _ in outputs:
        heading = lines[0].replace(" (a separate run)", "") + " (a separate run)"
        body = [heading, "", f"Measured on: {machine}; {date}, `{command}`."] + lines[1:]
        while body[-1] == "":
            body.pop()
        body.append("")
        same = [i for i, section in enumerate(sections) if _key(section[0]) == _key(lines[0])]
        separate = [i for i in same if "(a separate run)" in sections[i][0]]
        if separate:  # measured again
            sections[separate[0]] = body
        elif same:  # the file's own run (its header's machine) stays, the new one after it
            sections.insert(same[-1] + 1, body)
        else:
            sections.append(body)
    out = "\n".join(merged_head).rstrip("\n") + "\n\n"
    for section in sections:
        while section and section[-1] == "":
            section = section[:-1]
        out += "\n".join(section) + "\n\n"
    return out.rstrip("\n") + "\n"
