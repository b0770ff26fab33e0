"""The sweep's Pipes messages arrive whole, however large, while the external process is still writing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from dagster import PipesSubprocessClient, asset, materialize

from kernelindex_pipeline.defs.pipes_messages import CompleteLinePipesMessageReader, complete_lines

WRITER = textwrap.dedent(
    """
    import json, sys
    path, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for i in range(count):
        with open(path, "a") as f:  # as dagster_pipes' file channel appends a message
            f.write(json.dumps({"i": i, "data": "x" * size}) + "\\n")
    """
)


def test_complete_lines_never_hands_on_a_line_still_being_written(tmp_path):
    path = tmp_path / "messages.jsonl"
    path.write_bytes(b"")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "30", "2000000"])
    decoded = [json.loads(line) for line in complete_lines(str(path), lambda: writer.poll() is not None)]
    assert writer.wait() == 0
    assert [m["i"] for m in decoded] == list(range(30))
    assert all(len(m["data"]) == 2_000_000 for m in decoded)


def test_a_final_line_without_newline_is_handed_on_once_the_writer_is_done(tmp_path):
    path = tmp_path / "messages.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": 2}')
    assert list(complete_lines(str(path), lambda: True)) == [b'{"a": 1}', b'{"b": 2}']


EXTERNAL = textwrap.dedent(
    """
    from dagster_pipes import open_dagster_pipes
    with open_dagster_pipes() as pipes:
        for i in range(5):
            pipes.report_custom_message({"i": i, "csv": "k,v\\n" * 400_000})
        pipes.report_asset_materialization(metadata={"messages": 5})
    """
)


def test_large_custom_messages_through_a_real_pipes_subprocess(tmp_path):
    script = tmp_path / "external.py"
    script.write_text(EXTERNAL)
    received = []

    @asset
    def big_messages(context) -> None:
        client = PipesSubprocessClient(message_reader=CompleteLinePipesMessageReader())
        invocation = client.run(context=context, command=[sys.executable, str(script)])
        received.extend(invocation.get_custom_messages())
        return invocation.get_materialize_result()

    assert materialize([big_messages]).success
    assert [m["i"] for m in received] == list(range(5))
    assert all(len(m["csv"]) == 4 * 400_000 for m in received)
