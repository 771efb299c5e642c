"""bench/bench_args.py - the command line of bench/'s PyTorch scripts, answered as the lab book's
programs answer theirs: --help prints the script's description and usage (exit 0); a bad
argument prints one line with the reason and the usage (exit 2)."""
import sys


class Usage:
    """The script's name (for its messages), its description (the module's docstring) and usage line."""

    def __init__(self, name, doc, usage):
        self.name, self.doc, self.usage = name, doc, usage

    def help_if_asked(self, argv):
        if any(a in ("-h", "--help") for a in argv):
            print(self.doc.strip())
            print()
            print(self.usage)
            sys.exit(0)

    def error(self, why):
        print(f"{self.name}: {why}", file=sys.stderr)
        print(self.usage, file=sys.stderr)
        sys.exit(2)
