#!/usr/bin/env python3
"""A Python 3 transcription of HPCC's analysis/fct_analysis.py (alibaba-edu/High-Precision-Congestion-Control
at 9f4be2a9ead8a90e8bf732c66bd758c00e58e5be), written from its behaviour, for one fct.txt instead of the
script's hard-coded list of CC names. It runs the script's own awk | sort pipeline (Debian's mawk and
GNU sort, LC_ALL=C) and then its Python 2 arithmetic, with Python 3's // where Python 2's / divided
integers. Output: the script's lines for one CC ("%.3f %d\t%.3f %.3f %.3f"); with --repr, the same
values printed with repr() so a test can compare them exactly.

    python3 fct_analysis3.py FCT_TXT [-t 0|1|2] [-T ns] [-s step] [--repr]
"""
import argparse
import os
import subprocess
import sys


def get_pctl(a, p):
    i = int(len(a) * p)
    return a[i]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("-s", dest="step", default="5")
    ap.add_argument("-t", dest="type", type=int, default=0)
    ap.add_argument("-T", dest="time_limit", type=int, default=3000000000)
    ap.add_argument("--repr", action="store_true")
    args = ap.parse_args()
    step = int(args.step)
    # The script's awk programs. Its -t 2 program is missing "if (" and does not parse; this one is
    # what it evidently means.
    if args.type == 0:
        cond = "$4==100 && "
    elif args.type == 1:
        cond = "$4==200 && "
    else:
        cond = ""
    cmd = ("cat %s" % args.file + " | awk '{if (" + cond + "$6+$7<" + "%d" % args.time_limit +
           ") {slow=$7/$8;print slow<1?1:slow, $5}}' | sort -n -k 2")
    env = dict(os.environ, LC_ALL="C")
    output = subprocess.check_output(cmd, shell=True, env=env).decode()
    a = output.split("\n")[:-2]  # the script drops the trailing "" and the last line
    n = len(a)
    res = [[i / 100.0] for i in range(0, 100, step)]
    for i in range(0, 100, step):
        l = i * n // 100
        r = (i + step) * n // 100
        d = [[float(x.split()[0]), int(x.split()[1])] for x in a[l:r]]
        fct = sorted(x[0] for x in d)
        res[i // step].append(d[-1][1])  # IndexError on an empty bin, as in the script
        res[i // step].append(get_pctl(fct, 0.5))
        res[i // step].append(get_pctl(fct, 0.95))
        res[i // step].append(get_pctl(fct, 0.99))
    for item in res:
        if args.repr:
            print(repr(item[0]), item[1], repr(item[2]), repr(item[3]), repr(item[4]))
        else:
            print("%.3f %d" % (item[0], item[1]) + "\t%.3f %.3f %.3f" % (item[2], item[3], item[4]))


if __name__ == "__main__":
    sys.exit(main())
