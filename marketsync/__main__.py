from marketsync.cli import main

main()
