"""`python -m gossiplab` is the `gossiplab` command."""

from gossiplab.cli import main

main()
