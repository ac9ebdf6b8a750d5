# SPDX-License-Identifier: MIT
"""completion.py OUTDIR COMMAND...: the bash completion of each cluster command
(stagebench-cluster, ...), written to OUTDIR/COMMAND, generated at build time from the
command's own argparse parser, so that it offers exactly what the parser takes: every option
string, the words of a choice, directories where a directory is asked (a metavar DIR or
..._DIR), files where a file is (FILE, PATH, RESULTS), the test names of the catalogue where
tests are. stagebench-cron completes the launcher's options after its --; a command with
subcommands (stagebench-history) its subcommands' names, then the named one's options. Run
with the package's directory on PYTHONPATH and STAGEBENCH_CATALOGUE set (scripts/CMakeLists.txt)."""
import argparse
import importlib
import os
import sys

# What a value is, by the last word of its metavar ("STATE_DIR" -> "DIR").
KINDS = {"DIR": "dirs", "FILE": "files", "PATH": "files", "RESULTS": "files", "TEST": "tests"}
# The launcher whose options follow stagebench-cron's --: (the option choosing it, if given).
CRON_LAUNCHERS = (("--sim", "stagebench-sim"), (None, "stagebench-cluster"))


class _Captured(Exception):
    def __init__(self, parser):
        Exception.__init__(self)
        self.parser = parser


def parser_of(module):
    """The command's parser: build_parser(), else the one parse_args([]) builds (caught when
    it starts parsing, before it reads anything)."""
    if hasattr(module, "build_parser"):
        return module.build_parser()

    def capture(self, args=None, namespace=None):
        raise _Captured(self)
    saved = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture
    try:
        module.parse_args([])
    except _Captured as c:
        return c.parser
    finally:
        argparse.ArgumentParser.parse_args = saved
    raise SystemExit("completion.py: %s builds no argparse parser" % module.__name__)


def kind(action):
    """What the value of action is: 'words' (choices), 'dirs', 'files', 'tests' or None."""
    if action.choices:
        return "words"
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return KINDS.get(metavar.split("_")[-1])


def compgen(what, words=""):
    if what == "dirs":
        return 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur"))'
    if what == "files":
        return 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))'
    return "COMPREPLY=($(compgen -W '%s' -- \"$cur\"))" % words


def function_name(command):
    return "_" + command.replace("-", "_")


def function(command, parser, tests, extra_words=()):
    """The bash function completing command's words from parser."""
    options, values, positional = list(extra_words), [], None
    for action in parser._actions:
        if not action.option_strings:
            positional = positional or action
            continue
        options.extend(action.option_strings)
        if action.nargs == 0:
            continue
        what = kind(action)
        words = " ".join(str(c) for c in action.choices or ())
        values.append((action.option_strings, compgen(what, words) + "; return"
                       if what in ("words", "dirs", "files") else "return"))
    out = ["%s()" % function_name(command), "{",
           "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}",
           "\tcase $prev in"]
    for strings, action in values:
        out.append("\t%s) %s ;;" % ("|".join(strings), action))
    out.append("\tesac")
    words = " ".join(options)
    what = kind(positional) if positional else None
    if what == "words":  # the choices of the operand (a subcommand's name)
        words = " ".join(options + [str(c) for c in positional.choices])
    if what == "tests":
        out.append("\tCOMPREPLY=($(compgen -W '%s %s' -- \"$cur\"))" % (words, tests))
    elif what in ("dirs", "files"):
        out.append('\tif [[ $cur == -* ]]; then')
        out.append("\t\tCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))" % words)
        out.append("\telse")
        out.append("\t\t" + compgen(what))
        out.append("\tfi")
    else:
        out.append("\tCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))" % words)
    out.append("}")
    return out


def cron_function(parser, tests):
    """stagebench-cron: its own options before --, the launcher's after it."""
    own = function("stagebench-cron-own", parser, tests, extra_words=("--",))
    out = own + ["%s()" % function_name("stagebench-cron"), "{",
                 "\tlocal i launcher=%s" % function_name(CRON_LAUNCHERS[-1][1]),
                 "\tfor ((i = 1; i < COMP_CWORD; i++)); do",
                 "\t\tcase ${COMP_WORDS[i]} in"]
    for option, launcher in CRON_LAUNCHERS[:-1]:
        out.append("\t\t%s) launcher=%s ;;" % (option, function_name(launcher)))
    out += ["\t\t--) $launcher; return ;;",
            "\t\tesac",
            "\tdone",
            "\t%s" % function_name("stagebench-cron-own"),
            "}"]
    return out


def subcommands(parser):
    """[(name, parser)] of parser's subcommands (argparse's add_subparsers), or []."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def subcommand_function(command, parser, tests):
    """command's words completed by the subcommand named before the word (skipping the values
    of the options before it), else by command's own options and subcommands."""
    own = function(command + "-own", parser, tests)
    out = []
    for name, sub in subcommands(parser):
        out += function("%s-%s" % (command, name), sub, tests)
    valued = [s for a in parser._actions if a.option_strings and a.nargs != 0
              for s in a.option_strings]
    out += own + ["%s()" % function_name(command), "{",
                  "\tlocal i",
                  "\tfor ((i = 1; i < COMP_CWORD; i++)); do",
                  "\t\tcase ${COMP_WORDS[i]} in"]
    if valued:
        out.append("\t\t%s) ((i++)) ;;" % "|".join(valued))
    for name, _sub in subcommands(parser):
        out.append("\t\t%s) %s; return ;;" % (name, function_name("%s-%s" % (command, name))))
    out += ["\t\tesac",
            "\tdone",
            "\t%s" % function_name(command + "-own"),
            "}"]
    return out


def script(command, version, parsers, tests):
    lines = ["# bash completion of %s %s, generated from its argument parser" % (command,
                                                                                  version)]
    if command == "stagebench-cron":
        for _opt, launcher in CRON_LAUNCHERS:
            lines += function(launcher, parsers[launcher], tests)
        lines += cron_function(parsers[command], tests)
    elif subcommands(parsers[command]):
        lines += subcommand_function(command, parsers[command], tests)
    else:
        lines += function(command, parsers[command], tests)
    lines.append("complete -F %s %s" % (function_name(command), command))
    return "\n".join(lines) + "\n"


def main():
    outdir, commands = sys.argv[1], sys.argv[2:]
    from stagebench import catalogue
    cat = catalogue.load()
    tests = " ".join(list(cat.tests) + [p for p in cat.parts if p not in cat.tests] + ["all"])
    names = set(commands) | set(launcher for _o, launcher in CRON_LAUNCHERS)
    parsers = dict((name, parser_of(importlib.import_module(
        "stagebench." + name[len("stagebench-"):]))) for name in names)
    for command in commands:
        path = os.path.join(outdir, command)
        with open(path + ".tmp", "w") as f:
            f.write(script(command, cat.version, parsers, tests))
        os.rename(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
