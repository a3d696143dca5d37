"""Regenerates the *.golden.jsonl files: NeMo Gym 0.7.0's own prepare.py,
run on the rows of *.rows.json through a stand-in for datasets.load_dataset.

usage: python3 golden.py DIR   (DIR holds the extracted nemo-gym 0.7.0 wheel)
"""
import importlib.util, json, pathlib, sys, tempfile, types

wheel = pathlib.Path(sys.argv[1])
here = pathlib.Path(__file__).parent
rows = None
datasets = types.ModuleType("datasets")
datasets.load_dataset = lambda *a, **k: rows
sys.modules["datasets"] = datasets
gc = types.ModuleType("nemo_gym.global_config")
gc.HF_TOKEN_KEY_NAME = "hf_token"
gc.get_global_config_dict = lambda: {}
sys.modules["nemo_gym"] = types.ModuleType("nemo_gym")
sys.modules["nemo_gym.global_config"] = gc

for golden, script in [("aime", "aime24"), ("aime_str", "aime25"), ("aime_float", "apex25"), ("gpqa", "gpqa"), ("mmlu_pro", "mmlu_pro")]:
    rows = json.loads((here / f"{golden}.rows.json").read_text())
    spec = importlib.util.spec_from_file_location(script, wheel / "benchmarks" / script / "prepare.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with tempfile.TemporaryDirectory() as d:
        mod.DATA_DIR = pathlib.Path(d)
        mod.OUTPUT_FPATH = pathlib.Path(d) / "out.jsonl"
        out = mod.prepare()
        (here / f"{golden}.golden.jsonl").write_bytes(pathlib.Path(out).read_bytes())
