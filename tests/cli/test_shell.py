# Copyright 2026 The Timelake Authors. Apache-2.0.
"""The interactive shell of `timelake sql` (issue 23, item 7): Ctrl-C at the
prompt and during a query, and the backslash commands.

The shell runs on a pseudo-terminal, as under a user at a keyboard (the pty is
its controlling terminal, so Ctrl-C raises SIGINT). Every read waits for what
the shell prints next, with a timeout; where the output is the contract (the
command list, the expanded layout) it is compared with a golden file under
tests/cli/golden/. Same conventions as test_cli.py, whose fixtures these
tests share.

    TIMELAKE_BIN=build/release/timelake .venv/bin/python -m pytest -q tests/cli/test_shell.py
"""

import fcntl
import os
import pathlib
import pty
import re
import select
import struct
import termios
import time

from test_cli import (  # noqa: F401 (binary and cli are fixtures)
    ROWS,
    binary,
    cli,
    write_csv,
)

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
PROMPT = "timelake> "
MORE = "      -> "
# Either prompt, whichever the shell prints next.
ANY_PROMPT = re.compile(re.escape(PROMPT) + "|" + re.escape(MORE))
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TIMING = re.compile(r"^\(\d[\d,]* rows?, [^)]+\)$", re.M)
# How long one expected output may take (the first query starts the engine).
TIMEOUT = 60
# Minutes of work before DataFusion has a first batch (the filter keeps it
# from answering from statistics).
BUSY = "SELECT count(*) FROM range(100000000000) WHERE value % 7 = 3;"


def golden(name):
    return (GOLDEN / name).read_text()


class Shell:
    """`timelake sql` on a pseudo-terminal of `columns` columns."""

    def __init__(self, binary, warehouse, home, columns=200):
        env = {k: v for k, v in os.environ.items() if k != "TIMELAKE_WAREHOUSE"}
        # A dumb terminal: readline echoes keys without cursor movements.
        env.update(HOME=str(home), TERM="dumb", INPUTRC=os.devnull)
        argv = [str(binary), "-w", str(warehouse), "sql"]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child, with the pty as its controlling terminal
            try:
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.resize(columns)
        self.output = ""  # everything printed, "\r" and escapes removed
        self.seen = 0  # how much of it expect() has consumed
        try:
            self.expect(PROMPT)
        except BaseException:
            self.kill()
            raise

    def resize(self, columns):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))

    def send(self, text):
        os.write(self.fd, text.encode())

    def expect(self, pattern, timeout=TIMEOUT):
        """Reads until `pattern` (text or a compiled regex) appears in the
        output after the last match; returns that output up to the match's
        end and the match. Fails when the shell exits or the time is up."""
        regex = pattern if isinstance(pattern, re.Pattern) else re.compile(re.escape(pattern))
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.output, self.seen)
            if match:
                text = self.output[self.seen:match.end()]
                self.seen = match.end()
                return text, match
            left = deadline - time.monotonic()
            assert left > 0, f"no {regex.pattern!r} within {timeout} s:\n{self.rest()}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # the terminal closed: the shell has exited
                chunk = b""
            assert chunk, f"the shell exited while waiting for {regex.pattern!r}:\n{self.rest()}"
            text = chunk.decode(errors="replace").replace("\r", "")
            self.output += ESCAPES.sub("", text)

    def rest(self):
        return self.output[self.seen:]

    def run(self, line):
        """Types `line` and Enter; returns what the shell printed after the
        echoed line and the prompt it shows next."""
        self.send(line + "\n")
        text, match = self.expect(ANY_PROMPT)
        printed = text[:len(text) - len(match.group(0))]
        # The first line is readline's echo of what was typed.
        return printed.split("\n", 1)[1] if "\n" in printed else "", match.group(0)

    def quit(self):
        """\\q; returns the exit status."""
        self.send("\\q\n")
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            try:  # keep the terminal drained so that the shell never blocks
                if select.select([self.fd], [], [], 0.05)[0]:
                    os.read(self.fd, 65536)
            except OSError:
                pass
        self.kill()
        raise AssertionError(f"the shell did not exit after \\q:\n{self.rest()}")

    def kill(self):
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


def open_shell(cli, columns=200):
    return Shell(cli.binary, cli.warehouse, cli.cwd, columns)


def result_lines(printed):
    """The statement's own output: without the timing line."""
    return [line for line in TIMING.sub("", printed).splitlines() if line]


def test_ctrl_c_at_the_prompt_clears_the_line_and_keeps_session_and_history(cli):
    sh = open_shell(cli)
    try:
        assert sh.run("SET timelake.read_dedup = false;")[1] == PROMPT
        printed, _ = sh.run("SELECT 41 + 1 AS answer;")
        assert "42" in printed

        # A half-typed line (an open string, which would swallow the next
        # line): Ctrl-C drops it and shows a fresh prompt.
        sh.send("SELECT 'half")
        sh.expect("half")
        sh.send("\x03")
        sh.expect(PROMPT)
        # Twice in a row does not quit either.
        sh.send("\x03")
        sh.expect(PROMPT)
        sh.send("\x03")
        sh.expect(PROMPT)
        # An unfinished statement over several lines is dropped too.
        assert sh.run("SELECT")[1] == MORE
        sh.send("\x03")
        sh.expect(PROMPT)

        printed, prompt = sh.run("SHOW timelake.read_dedup;")
        assert prompt == PROMPT
        assert "error" not in printed, printed
        assert re.search(r"timelake\.read_dedup\s*\|\s*false", printed), printed
        # The history is intact: Ctrl-P brings back the last statement.
        sh.send("\x10")
        sh.expect("SHOW timelake.read_dedup;")
        printed, _ = sh.run("")
        assert re.search(r"timelake\.read_dedup\s*\|\s*false", printed), printed
        assert sh.quit() == 0
    except BaseException:
        sh.kill()
        raise
    history = (cli.cwd / ".timelake_history").read_text().splitlines()
    assert "SELECT 41 + 1 AS answer;" in history
    assert "SHOW timelake.read_dedup;" in history
    assert not any("half" in line for line in history), history


def test_ctrl_c_cancels_a_running_query_and_the_session_goes_on(cli):
    sh = open_shell(cli)
    try:
        sh.run("SET timelake.read_dedup = false;")
        sh.send(BUSY + "\n")
        sh.expect(BUSY + "\n")  # readline has taken the line: the query starts
        # Ctrl-C until the shell says it cancelled (the first one may come
        # before the query is under way); each wait is bounded.
        for _ in range(10):
            time.sleep(0.3)
            sh.send("\x03")
            try:
                sh.expect("cancelled", timeout=3)
                break
            except AssertionError as missed:
                if "exited" in str(missed):
                    raise
        else:
            raise AssertionError(f"no 'cancelled' after 10 Ctrl-C:\n{sh.rest()}")
        sh.expect(PROMPT)
        printed, prompt = sh.run("SELECT 2 AS two;")
        assert prompt == PROMPT and "error" not in printed, printed
        assert result_lines(printed)[-1].strip() == "2", printed
        printed, _ = sh.run("SHOW timelake.read_dedup;")
        assert re.search(r"timelake\.read_dedup\s*\|\s*false", printed), printed
        assert sh.quit() == 0
    except BaseException:
        sh.kill()
        raise


def test_unknown_backslash_command_is_an_error_not_a_continuation(cli):
    sh = open_shell(cli)
    try:
        printed, prompt = sh.run("\\foo")
        assert printed.strip() == (
            "timelake: error: unknown command \\foo; \\? lists the commands"), printed
        assert prompt == PROMPT
        printed, prompt = sh.run("\\timing maybe")
        assert "\\timing takes on or off" in printed and prompt == PROMPT, printed
        # The next statement is not glued to the command.
        printed, _ = sh.run("SELECT 3 AS three;")
        assert result_lines(printed)[-1].strip() == "3", printed
        assert sh.quit() == 0
    except BaseException:
        sh.kill()
        raise


def test_help_lists_every_command(cli):
    sh = open_shell(cli)
    try:
        printed, prompt = sh.run("\\?")
        assert printed == golden("shell_help.txt")
        assert prompt == PROMPT
        for command in ("\\timing", "\\d", "\\x", "\\q"):
            assert command in printed
        assert sh.quit() == 0
    except BaseException:
        sh.kill()
        raise


def test_timing_off_drops_the_timing_line(cli):
    sh = open_shell(cli)
    try:
        printed, _ = sh.run("SELECT 1 AS one;")
        assert TIMING.search(printed), printed  # on by default
        printed, _ = sh.run("\\timing off")
        assert printed.strip() == "Timing is off."
        printed, _ = sh.run("SELECT 1 AS one;")
        assert not TIMING.search(printed), printed
        assert result_lines(printed)[-1].strip() == "1", printed
        printed, _ = sh.run("\\timing")
        assert printed.strip() == "Timing is on."
        printed, _ = sh.run("SELECT 1 AS one;")
        assert TIMING.search(printed), printed
        assert sh.quit() == 0
    except BaseException:
        sh.kill()
        raise


def test_d_lists_tables_and_describes_one(cli, tmp_path):
    write_csv(tmp_path / "r.csv", ROWS)
    cli.run("append", "--create", "--time-column", "time", "--series-key", "device",
            "iot.readings", tmp_path / "r.csv")
    sh = open_shell(cli)
    try:
        printed, _ = sh.run("\\d")
        assert printed.splitlines() == ["iot.readings"], printed
        printed, prompt = sh.run("\\d iot.readings")
        assert prompt == PROMPT
        lines = printed.splitlines()
        assert lines[0] == "table iot.readings", printed
        rows = {cells[0]: cells for cells in
                ([c.strip() for c in line.split("|")] for line in lines[3:])}
        assert rows["time"][1].startswith("timestamp[us, tz="), printed
        assert rows["time"][2:] == ["false", "time"], printed
        assert rows["device"][3] == "series key", printed
        assert rows["temp"][2:] == ["true", ""], printed
        assert rows["n"][3] == "", printed
        printed, prompt = sh.run("\\d iot.nope")
        assert printed.startswith("timelake: error: ") and "nope" in printed, printed
        assert prompt == PROMPT
        assert sh.quit() == 0
    except BaseException:
        sh.kill()
        raise


def test_expanded_display(cli):
    sh = open_shell(cli)
    try:
        printed, _ = sh.run("\\x")
        assert printed.strip() == "Expanded display is on."
        printed, _ = sh.run("SELECT * FROM (VALUES (1, 'hello'), (2, 'hi')) "
                            "AS t(a, bbbbbbbbbbbbbbbbb) ORDER BY a;")
        assert "\n".join(result_lines(printed)) + "\n" == golden("shell_expanded.txt")
        printed, _ = sh.run("\\x off")
        assert printed.strip() == "Expanded display is off."
        printed, _ = sh.run("SELECT 1 AS a;")
        assert result_lines(printed) == [" a", "--", " 1"], printed

        # auto: expanded only for a table wider than the terminal.
        printed, _ = sh.run("\\x auto")
        assert printed.strip() == "Expanded display is used automatically."
        sh.resize(60)
        printed, _ = sh.run("SELECT 1 AS a;")
        assert result_lines(printed) == [" a", "--", " 1"], printed
        printed, _ = sh.run("SELECT repeat('x', 70) AS wide;")
        lines = result_lines(printed)
        assert lines[0].startswith("-[ RECORD 1 ]"), printed
        assert lines[1].startswith("wide | xxxx"), printed
        assert sh.quit() == 0
    except BaseException:
        sh.kill()
        raise
