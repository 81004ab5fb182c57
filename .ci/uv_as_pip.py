"""`uv` with pip's settings: `python .ci/uv_as_pip.py pip install ...` runs the uv that `python`
has installed, where pip would look for packages.

`make install-test` and `make test-pythons` install with uv: a fresh clone's `make install-test`
took 153 s of wall clock with pip on the EPYC, 67 with uv, the bytecode compiled on both cores
(docs/measurements.md, "The test suite"). uv reads no pip configuration, and a machine's pip
settings say where its packages are (an index mirror, a folder of wheels such as a CPU-only
torch, a constraints file): this passes what `pip config list` reports (pip.conf files and PIP_*
variables) on as uv's variables, which a UV_* variable already set overrides, and pip's
constraints files as arguments. uv picks the best version across all indexes, as pip does
(UV_INDEX_STRATEGY=unsafe-best-match), not the first index's.
"""
import ast
import os
import subprocess
import sys

import uv

# pip's option -> (uv's variable, the separator uv's variable takes between values).
SETTINGS = {
    "index-url": ("UV_DEFAULT_INDEX", None),
    "extra-index-url": ("UV_INDEX", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "trusted-host": ("UV_INSECURE_HOST", " "),
    "timeout": ("UV_HTTP_TIMEOUT", None),
    "cert": ("SSL_CERT_FILE", None),
}
# pip's other names for the same option.
ALIASES = {"default-timeout": "timeout"}


def pip_settings(python, environ=None):
    """pip's options for `install`, as {option: value}; later sources override earlier ones, as
    pip reads them (global, user, site files, then PIP_* variables: `environ`'s, or this
    process's)."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], check=True,
                            capture_output=True, text=True, env=environ).stdout
    settings = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        section, _, option = key.rpartition(".")
        if section.lstrip(":").split(":")[0] in ("global", "install", "env"):
            settings[ALIASES.get(option, option)] = ast.literal_eval(value)
    return settings


def constraints(settings):
    """pip's constraints files, as `uv pip install` arguments (uv ignores UV_CONSTRAINT when the
    command line has a -c of its own)."""
    return [arg for path in settings.get("constraint", "").split() for arg in ("-c", path)]


def uv_environment(settings, environ):
    """`environ` with uv's variables for pip's `settings` added (those it sets already kept)."""
    env = dict(environ)
    for option, value in settings.items():
        if option in SETTINGS:
            name, separator = SETTINGS[option]
            if separator:
                value = separator.join(value.split())
            env.setdefault(name, value)
    if settings.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        env.setdefault("UV_NO_INDEX", "1")
    env.setdefault("UV_INDEX_STRATEGY", "unsafe-best-match")
    return env


def main():
    settings = pip_settings(sys.executable)
    args = sys.argv[1:]
    if args[:2] == ["pip", "install"]:
        args += constraints(settings)
    env = uv_environment(settings, os.environ)
    sys.exit(subprocess.run([uv.find_uv_bin(), *args], env=env).returncode)


if __name__ == "__main__":
    main()
