"""The command line: the argparse frame, shared argument helpers, printing, doctor, and one module per command."""
