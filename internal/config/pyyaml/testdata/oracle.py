"""Reference for oracle_test.go: OmegaConf's YAML loader and dumper, rebuilt
on plain PyYAML exactly as omegaconf/_utils.py defines them.

Reads JSON requests, one per line, and answers one JSON line each:
  {"op": "dump", "tree": T}  -> {"out": text}
  {"op": "load", "text": s}  -> {"tree": T} or {"err": problem, "line": L, "col": C}
Trees are tagged: {"t": "null"|"bool"|"int"|"float"|"str"|"map"|"list", ...};
floats travel as float.hex() text, map entries as [key tree, value tree].
"""
import json
import re
import sys

import yaml

YAML_BOOL_TYPES = ["y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
                   "true", "True", "TRUE", "false", "False", "FALSE",
                   "on", "On", "ON", "off", "Off", "OFF"]


def is_float(st):
    try:
        float(st)
        return True
    except ValueError:
        return False


def is_int(st):
    try:
        int(st)
        return True
    except ValueError:
        return False


class OmegaConfDumper(yaml.Dumper):
    @staticmethod
    def str_representer(dumper, data):
        with_quotes = data in YAML_BOOL_TYPES or is_int(data) or is_float(data)
        return dumper.represent_scalar(yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG,
                                       data, style=("'" if with_quotes else None))


OmegaConfDumper.add_representer(str, OmegaConfDumper.str_representer)


class OmegaConfLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        keys = set()
        for key_node, value_node in node.value:
            if key_node.tag != yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                continue
            if key_node.value in keys:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key_node.value}", key_node.start_mark)
            keys.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


OmegaConfLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile("""^(?:
     [-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*
    |[-+]?\\.(?:inf|Inf|INF)
    |\\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))
OmegaConfLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in OmegaConfLoader.yaml_implicit_resolvers.items()
}


def from_tree(t):
    k = t["t"]
    if k == "null":
        return None
    if k == "bool":
        return t["v"]
    if k == "int":
        return int(t["v"])
    if k == "float":
        return float.fromhex(t["v"])
    if k == "str":
        return t["v"]
    if k == "list":
        return [from_tree(x) for x in t["v"]]
    return {from_tree(kt): from_tree(vt) for kt, vt in t["v"]}


def to_tree(o, seen=()):
    if any(o is s for s in seen):
        raise ValueError("recursive")
    if o is None:
        return {"t": "null"}
    if isinstance(o, bool):
        return {"t": "bool", "v": o}
    if isinstance(o, int):
        return {"t": "int", "v": str(o)}
    if isinstance(o, float):
        return {"t": "float", "v": o.hex()}
    if isinstance(o, str):
        return {"t": "str", "v": o}
    if isinstance(o, list):
        return {"t": "list", "v": [to_tree(x, seen + (o,)) for x in o]}
    if isinstance(o, dict):
        return {"t": "map", "v": [[to_tree(k), to_tree(v, seen + (o,))] for k, v in o.items()]}
    return {"t": "other", "v": type(o).__name__}


def main():
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "dump":
            out = yaml.dump(from_tree(req["tree"]), default_flow_style=False,
                            allow_unicode=True, sort_keys=False, Dumper=OmegaConfDumper)
            resp = {"out": out}
        else:
            try:
                obj = yaml.load(req["text"], Loader=OmegaConfLoader)
                resp = {"tree": to_tree(obj)}
            except yaml.MarkedYAMLError as e:
                m = e.problem_mark
                resp = {"err": str(e.problem), "line": m.line + 1 if m else 0,
                        "col": m.column + 1 if m else 0}
            except Exception as e:  # PyYAML's own crashes (int('', 2) ...)
                resp = {"err": type(e).__name__ + ": " + str(e), "line": 0, "col": 0}
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()


main()
