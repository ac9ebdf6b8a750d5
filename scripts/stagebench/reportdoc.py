# SPDX-License-Identifier: MIT
"""The reference of the cluster report (stagebench.report/2) as Markdown, generated from the
report model's field lists (model.py): every JSON object with its fields (type, unit, meaning),
then the CSV columns. Run as `python3 -m stagebench.reportdoc` (the man-page build includes
its output); it prints to stdout, or to the file given."""
import sys

from . import files
from .common import REPORT_SCHEMA
from .model import CSV_COLUMNS, Report, TestResult, csv_columns


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def records(root=Report):
    """root and every record class its fields hold, in order of first appearance."""
    out, todo = [], [root]
    while todo:
        cls = todo.pop(0)
        if cls in out:
            continue
        out.append(cls)
        todo += [f.nested() for f in cls.FIELDS if f.nested() is not None]
    return out


def _object(cls):
    lines = ["## %s" % cls.__name__, "", cls.DOC, "",
             "| field | type | unit | meaning |", "|---|---|---|---|"]
    for f in cls.FIELDS:
        lines.append("| `%s` | %s | %s | %s |" % (f.name, _cell(f.type_text()), _cell(f.unit),
                                                   _cell(f.meaning)))
    return lines + [""]


def _csv():
    sums = {c.number: c.source for c, _f in csv_columns(TestResult)}
    lines = ["## CSV columns", "",
             "`stagebench-collect --format csv`: a header, one row per part and repetition "
             "(PartResult), then one row per test and repetition (TestResult, its `part` the "
             "word `sum`); an empty cell is a null. Numbers as `%.9g`, booleans as `true` and "
             "`false`, lists of nodes space-separated.", "",
             "| column | name | a part's row | a test's row |", "|---|---|---|---|"]
    for c, _f in CSV_COLUMNS:
        lines.append("| %d | `%s` | %s | %s |" % (c.number, c.name, _cell(c.source),
                                                   _cell(sums.get(c.number, ""))))
    return lines + [""]


def markdown():
    """The whole reference."""
    lines = ["# The cluster report: %s" % REPORT_SCHEMA, "",
             "`stagebench-collect --format json` prints it, and the launcher writes it as "
             "`report.json` (with `report.txt`, the same as text). Generated from the report "
             "model (`python3 -m stagebench.reportdoc`): each object below is one record of "
             "the model, its fields in their JSON order. Units: s seconds, epoch s seconds "
             "since 1970 (UTC), B bytes, fraction 0 to 1, - none.", ""]
    for cls in records():
        lines += _object(cls)
    lines += _csv()
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = markdown()
    if argv:
        files.write_atomic(argv[0], text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
