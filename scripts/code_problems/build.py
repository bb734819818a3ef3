"""Build rla_envs/code/tasks/bundled_problems.json from the authoring sources in this folder.

    python scripts/code_problems/build.py

Each problem's expected outputs are computed by running its reference solution (trusted code).
"""
import json
import pathlib
import subprocess
import sys
import time

from problems_b import P

sys.setrecursionlimit(10000)

def run_fn(p, args):
    ns = {"__name__": "solution"}
    exec(p["reference"], ns)
    return ns[p["name"]](*args)

def run_io(p, stdin):
    r = subprocess.run([sys.executable, "-c", p["reference"]], input=stdin, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (p["name"], r.stderr)
    return r.stdout

out = []
names = set()
for p in P:
    assert p["name"] not in names
    names.add(p["name"])
    assert len(p["public"]) >= 3 and len(p["hidden"]) >= 5, p["name"]
    if p["form"] == "function":
        assert p["signature"].startswith(p["name"] + "(")
        def mk(args, p=p):
            return {"args": repr(tuple(args)), "expected": repr(run_fn(p, args))}
        spec = {"form": "function", "entry_point": p["name"], "signature": p["signature"]}
    else:
        def mk(stdin, p=p):
            return {"stdin": stdin, "stdout": run_io(p, stdin)}
        spec = {"form": "stdio"}
    t = time.time()
    spec["public_tests"] = [mk(x) for x in p["public"]]
    spec["hidden_tests"] = [mk(x) for x in p["hidden"]]
    spec["reference_solution"] = p["reference"]
    spec["limits"] = {"timeout_s": 3.0, "memory_mb": 512}
    out.append({"name": p["name"], "level": p["level"], "statement": p["statement"], "spec": spec})
    print(p["level"], p["form"], p["name"], f"{time.time()-t:.2f}s")
text = json.dumps({"format": "rla-bundled-code/1", "problems": out}, indent=1, ensure_ascii=False)
OUT = pathlib.Path(__file__).resolve().parents[2] / "rla_envs" / "code" / "tasks" / "bundled_problems.json"
OUT.write_text(text + "\n")
print(len(out), len(text))
