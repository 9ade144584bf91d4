"""The broker's command line: parse_args reads the usual forms itself (argparse's import and
parser cost every start ~2 ms) and gives the same answer argparse gives; the rest goes to argparse."""
import pytest

from minikafka.broker import cli

SAME = [
    [],
    ["--override", "listeners=PLAINTEXT://127.0.0.1:9092", "--override", "log.dirs=/tmp/d", "--log-level", "WARNING"],
    ["--config", "conf/broker.properties"],
    ["--config=conf/a.properties", "--config", "b.properties"],  # the last wins
    ["--override=a=b", "--override", "c=d=e", "--log-config", "conf/logging.ini"],
    ["--config="],  # an empty value
    ["--override=-x"],  # a value after '=' may start with '-'
    ["--log-level", "debug", "--log-level=INFO"],
    ["--override", "key=a value with spaces"],
]


@pytest.mark.parametrize("argv", SAME)
def test_the_usual_command_lines_are_read_as_argparse_reads_them(argv):
    assert vars(cli.parse_args(list(argv))) == vars(cli._argparse_args(list(argv)))


@pytest.mark.parametrize("argv", [
    ["--help"], ["-h"], ["--unknown", "x"], ["--config"], ["--override", "--log-level", "INFO"],
    ["positional"], ["--log", "INFO"], ["--config", "a", "--"],
])
def test_the_others_get_argparse_answer(argv, capsys):
    with pytest.raises(SystemExit) as fast:
        cli.parse_args(list(argv))
    out_fast = capsys.readouterr()
    with pytest.raises(SystemExit) as slow:
        cli._argparse_args(list(argv))
    assert fast.value.code == slow.value.code
    assert out_fast == capsys.readouterr()


@pytest.mark.parametrize("argv", [["--over", "a=b"], ["--log-l", "INFO"], ["--override", "-1"]])
def test_abbreviations_and_dashed_values_go_to_argparse(argv):
    assert vars(cli.parse_args(list(argv))) == vars(cli._argparse_args(list(argv)))
