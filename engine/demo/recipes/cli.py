"""The same from the shell: each line below is a ``cdp-engine`` command, run here one by one.

python -m engine.demo.recipes.cli URL
"""

import shlex
import sys

from engine.cli import main as cdp_engine

COMMANDS = [
    "version",
    'call Runtime.evaluate \'{"expression": "document.title"}\' --url {url}',
    "listen Runtime.consoleAPICalled --url {url} --count 2",
    "protocol Fetch",
]

if __name__ == "__main__":
    for line in COMMANDS:
        argv = shlex.split(line.replace("{url}", shlex.quote(sys.argv[1])))
        print("$ cdp-engine", shlex.join(argv), flush=True)
        if cdp_engine(argv) != 0:
            sys.exit(1)
