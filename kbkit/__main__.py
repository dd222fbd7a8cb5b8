from kbkit.cli import main

main()
