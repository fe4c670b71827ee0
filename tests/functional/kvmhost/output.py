"""Reading what fragments and guests print: KEY=VALUE lines, QMP lines."""

import json
import re


def line_value(text, key):
    """The value of the first line "KEY=VALUE" of text (there must be one)."""
    match = re.search(rf"^{re.escape(key)}=(\S*)", text, re.M)
    assert match, f"no {key}= line in:\n{text}"
    return match.group(1)


def qmp_messages(output):
    """The QMP messages an L1 script printed, each on a line "qmp: {...}"."""
    return [json.loads(line[len("qmp: "):])
            for line in output.splitlines() if line.startswith("qmp: {")]
