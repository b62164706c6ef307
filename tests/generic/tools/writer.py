"""A stand-in external solver for the generic-case tests: writes y = sin(t) in every format.

usage: writer.py LABEL EXIT_CODE SLEEP_S [ANY...]
Writes data.csv (t, y), data.npz (t, y), y.npy, data.h5 (/results/t, /results/y), data.json
({"y": [...], "scalars": {"n": N}}), argv.json (its own arguments) and env.json (its
environment) into the working
directory, prints a line to stdout and one to stderr, sleeps SLEEP_S seconds, exits EXIT_CODE.
"""
import json
import os
import sys
import time

import h5py
import numpy as np


def main() -> int:
    label, exit_code, sleep_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    with open("argv.json", "w") as fh:
        json.dump(sys.argv[1:], fh)
    with open("env.json", "w") as fh:
        json.dump(dict(os.environ), fh)
    t = np.linspace(0.0, 2.0, 21)
    y = np.sin(t)
    with open("data.csv", "w") as fh:
        fh.write("# written by writer.py\nt,y\n")
        fh.writelines(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(t, y))
    np.savez("data.npz", t=t, y=y)
    np.save("y.npy", y)
    with h5py.File("data.h5", "w") as fh:
        fh.create_dataset("results/t", data=t)
        fh.create_dataset("results/y", data=y)
    with open("data.json", "w") as fh:
        json.dump({"y": y.tolist(), "scalars": {"n": int(t.size)}}, fh)
    print(f"writer: label={label!r} n={t.size}")
    print("writer: a line on stderr", file=sys.stderr)
    sys.stdout.flush()
    time.sleep(sleep_s)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
