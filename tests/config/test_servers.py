"""`[servers.<name>]`: the team's other MCP servers, validated by the one config model, and `${NAME}`
references resolved from the environment over `.env.local`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.config.variables import BadReference, Unset, references, substitute
from kbkit.errors import ConfigError
from kbkit.server.team import BASE_VARIABLES, resolve
from tests.helpers.project import make_project

STDIO = '[servers.tracker]\ncommand = ["tracker-mcp"]\nenv = { TEAM_KEY = "${TRACKER_TOKEN}" }\n'
REMOTE = (
    '[servers.wiki]\nurl = "https://wiki.example/mcp"\nheaders = { Authorization = "Bearer ${WIKI_TOKEN}" }\n'
)


def project(tmp_path: Path, extra: str) -> Path:
    return make_project(tmp_path / "p", files={}, config=f'[kb]\npath = "docs"\n{extra}')


def refused(tmp_path: Path, extra: str) -> str:
    root = project(tmp_path, extra)
    with pytest.raises(ConfigError) as caught:
        load_settings(root)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_a_stdio_and_a_remote_server_are_read_with_the_variables_they_name(tmp_path: Path) -> None:
    settings = load_settings(project(tmp_path, STDIO + REMOTE))
    tracker, wiki = settings.servers["tracker"], settings.servers["wiki"]
    assert tracker.variables == ["TRACKER_TOKEN"] and not tracker.remote and not tracker.plain
    assert wiki.variables == ["WIKI_TOKEN"] and wiki.remote
    assert tracker.clients == () and tracker.startup_timeout == 60


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ('[servers.x]\ncommand = ["a"]\nurl = "https://x.example/mcp"\n', "not both"),
        ("[servers.x]\nstartup_timeout = 5\n", "set either command"),
        ('[servers.x]\ncommand = ["a"]\nbogus = 1\n', "unknown key 'bogus'"),
        ('[servers.x]\ncommand = ["a"]\nclients = ["cursr"]\n', "did you mean 'cursor'"),
        ('[servers."a;rm -rf ~"]\ncommand = ["a"]\n', "is not a server name"),
        ('[servers."$(id)"]\ncommand = ["a"]\n', "is not a server name"),
        ('[servers."a b"]\ncommand = ["a"]\n', "is not a server name"),
        ('[servers.kb]\ncommand = ["a"]\n', "named like the kb server"),
        ('[servers.x]\ncommand = ["a", "--key=${TOKEN"]\n', "without a closing }"),
        ('[servers.x]\ncommand = ["a"]\nenv = { K = "${my token}" }\n', "not a variable reference"),
        ('[servers.x]\ncommand = ["a"]\nenv = { K = "line\\nbreak" }\n', "line break or a NUL"),
        ('[servers.x]\ncommand = ["a"]\nenv = { K = "nul\\u0000byte" }\n', "line break or a NUL"),
        ('[servers.x]\ncommand = ["a"]\nenv = { "BAD NAME" = "v" }\n', "not a valid name"),
        (
            '[servers.x]\nurl = "https://x.example/mcp"\nheaders = { "Bad Header" = "v" }\n',
            "not a valid name",
        ),
        ('[servers.x]\nurl = "http://wiki.example/mcp"\n', "plain http only on loopback"),
        ('[servers.x]\nurl = "https://user:pw@wiki.example/mcp"\n', "no credentials in the URL"),
        ('[servers.x]\nurl = "https://x.example/mcp?api_key=abc123"\n', "looks like a secret"),
        ('[servers.x]\nurl = "ftp://x.example/"\n', "not an http(s) URL"),
        ('[servers.x]\ncommand = ["a"]\nheaders = { A = "b" }\n', "headers are for a url"),
        ('[servers.x]\nurl = "https://x.example/mcp"\nenv = { A = "b" }\n', "env is for a command"),
        ('[servers.x]\ncommand = ["a"]\npreapprove = ["*"]\n', "not a tool name"),
        ('[servers.x]\ncommand = ["a"]\nstartup_timeout = 0\n', "out of range"),
        ("[servers]\nx = 1\n", "must be a table"),
    ],
)
def test_a_bad_team_server_is_one_line_naming_the_table(tmp_path: Path, extra: str, fragment: str) -> None:
    message = refused(tmp_path, extra)
    assert fragment in message and "kbkit.toml" in message


def test_plain_http_on_loopback_and_a_url_token_by_reference_are_accepted(tmp_path: Path) -> None:
    extra = (
        '[servers.local]\nurl = "http://127.0.0.1:8123/mcp"\n'
        '[servers.search]\nurl = "https://s.example/mcp?api_key=${SEARCH_KEY}&region=eu"\n'
    )
    settings = load_settings(project(tmp_path, extra))
    assert settings.servers["local"].plain and settings.servers["search"].variables == ["SEARCH_KEY"]


def test_a_server_in_the_local_overlay_is_read_like_one_in_kbkit_toml(tmp_path: Path) -> None:
    root = project(tmp_path, STDIO)
    (root / "kbkit.local.toml").write_text("[servers.tracker]\nstartup_timeout = 5\n")
    assert load_settings(root).servers["tracker"].startup_timeout == 5
    (root / "kbkit.local.toml").write_text("[servers.tracker]\nbogus = 5\n")
    assert "kbkit.local.toml" in refused_at(root)


def refused_at(root: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(root)
    return str(caught.value)


def test_references_are_one_form_only() -> None:
    assert references("Bearer ${A_1} and ${B}") == ["A_1", "B"]
    assert references("no reference, $HOME and {env:X}") == []
    for bad in ("${", "${A", "${A-B}", "${1A}", "${}", "x ${A:-d}"):
        with pytest.raises(BadReference):
            references(bad)


def test_an_unset_or_empty_variable_is_named_never_replaced_by_nothing() -> None:
    with pytest.raises(Unset) as caught:
        substitute("Bearer ${A}${B}", {"A": "", "C": "x"})
    assert caught.value.names == ("A", "B")
    assert substitute("Bearer ${A}", {"A": "t"}) == "Bearer t"


def test_the_real_environment_wins_over_env_local_and_the_server_gets_only_its_own_env(
    tmp_path: Path,
) -> None:
    root = project(tmp_path, STDIO)
    (root / ".env.local").write_text("TRACKER_TOKEN=from-the-file\nOTHER_SECRET=not-for-this-server\n")
    environ = {"PATH": "/usr/bin", "HOME": "/home/me", "LANG": "C.UTF-8", "AWS_SECRET": "no"}
    launch = resolve(load_settings(root), "tracker", environ)
    assert dict(launch.env) == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "TEAM_KEY": "from-the-file",
    }
    assert launch.sources == {"TRACKER_TOKEN": ".env.local"}
    assert set(launch.env) <= {*BASE_VARIABLES, "TEAM_KEY"}
    assert "from-the-file" not in launch.describe() and "TRACKER_TOKEN" in launch.describe()
    launch = resolve(load_settings(root), "tracker", {**environ, "TRACKER_TOKEN": "from-the-shell"})
    assert launch.env["TEAM_KEY"] == "from-the-shell" and launch.sources == {
        "TRACKER_TOKEN": "the environment"
    }


def test_an_unset_variable_is_one_line_naming_it_and_where_to_put_it(tmp_path: Path) -> None:
    root = project(tmp_path, REMOTE)
    with pytest.raises(ConfigError) as caught:
        resolve(load_settings(root), "wiki", {"PATH": "/usr/bin"})
    assert "WIKI_TOKEN" in str(caught.value) and ".env.local" in str(caught.value)
    with pytest.raises(ConfigError, match="no team server named 'wik'"):
        resolve(load_settings(root), "wik", {})


def test_a_value_from_env_local_that_cannot_be_sent_is_refused_by_name(tmp_path: Path) -> None:
    root = project(tmp_path, STDIO + REMOTE)
    (root / ".env.local").write_text('WIKI_TOKEN="two\nlines"\nTRACKER_TOKEN="-----BEGIN KEY-----\nabc"\n')
    with pytest.raises(ConfigError) as caught:
        resolve(load_settings(root), "wiki", {"PATH": "/usr/bin"})
    assert "WIKI_TOKEN holds a line break" in str(caught.value) and "two" not in str(caught.value)
    launch = resolve(load_settings(root), "tracker", {"PATH": "/usr/bin"})  # a variable may hold lines
    assert launch.env["TEAM_KEY"].count("\n") == 1
    with pytest.raises(ConfigError, match="TRACKER_TOKEN holds a line break or a NUL"):
        resolve(load_settings(root), "tracker", {"PATH": "/usr/bin", "TRACKER_TOKEN": "nul\0byte"})
