"""The documentation: the README (the front page) and the MkDocs site under docs/.

Every ```python example of the README and of the site's pages runs as written, in one working
directory, the README first, then the pages in the site's navigation order (a page's example
may use the files an earlier one wrote: the sample data, the vocabulary). `mkdocs build
--strict` passes: a broken link, a page left out of the navigation, an API reference whose
docstring names a parameter the function lacks, all fail it. The README stays a front page
(at most ~200 lines) whose links lead to files that exist."""

import os
import re
import subprocess
import sys

import yaml

from tests.harness import REPO


def _nav_pages():
    with open(os.path.join(REPO, "mkdocs.yml"), encoding="utf-8") as file:
        nav = yaml.safe_load(file)["nav"]

    def pages(items):
        for item in items:
            for value in item.values():
                yield from pages(value) if isinstance(value, list) else [value]
    return list(pages(nav))


def _python_blocks(path):
    with open(path, encoding="utf-8") as file:
        return re.findall(r"```python\n(.*?)```", file.read(), flags=re.S)


def test_the_python_examples_of_the_readme_and_the_docs_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write sample data and checkpoints
    paths = [os.path.join(REPO, "README.md")] + [os.path.join(REPO, "docs", page)
                                                 for page in _nav_pages()]
    ran = []
    for path in paths:
        for block in _python_blocks(path):
            exec(compile(block, path, "exec"), {})
            ran.append(os.path.basename(path))
    assert ran.count("README.md") == 1 and len(ran) >= 7, ran


def test_the_site_builds_strictly_and_every_page_is_in_it(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert proc.returncode == 0, proc.stderr[-4000:]
    docs = os.path.join(REPO, "docs")
    written = {os.path.relpath(os.path.join(folder, name), docs)
               for folder, _, names in os.walk(docs) for name in names if name.endswith(".md")}
    assert written == set(_nav_pages()), written ^ set(_nav_pages())
    # the API reference: generated from the docstrings, examples as code
    api = (tmp_path / "site" / "api" / "training" / "index.html").read_text(encoding="utf-8")
    assert "WarmupLinearDecay" in api and '<span class="gp">&gt;&gt;&gt; </span>' in api


def test_the_readme_is_a_front_page_whose_links_exist():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as file:
        text = file.read()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) >= 15, links
    for link in links:
        assert os.path.exists(os.path.join(REPO, link)), f"README.md links to missing {link}"
