"""The regression scripts' parts (scripts/regress/iperf, scripts/regress/
tiobench; docs/benchmarks.md): one package, so that their modules' names
meet no other module's on sys.path."""
