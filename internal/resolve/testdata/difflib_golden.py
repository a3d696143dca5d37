"""Regenerates difflib_golden.json, the Python reference for difflib_test.go.

    python3 difflib_golden.py > difflib_golden.json

Deterministic (fixed seed), so a rerun with the same CPython gives the same file.
"""
import difflib
import json
import random

rng = random.Random(20260)


def rand_str(alphabet, lo, hi):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


pairs = []
# Short strings over small alphabets: many repeated characters, many ties
# inside find_longest_match.
for _ in range(300):
    pairs.append((rand_str("abc", 0, 12), rand_str("abc", 0, 12)))
for _ in range(200):
    pairs.append((rand_str("abcdefgh_-/", 1, 30), rand_str("abcdefgh_-/", 1, 30)))
# Around and past the 200-element autojunk threshold, with popular characters.
for _ in range(60):
    n = rng.choice([150, 199, 200, 201, 260, 400])
    pairs.append((rand_str("aab c", n - 20, n + 20), rand_str("aab c", n - 5, n)))
for _ in range(20):
    s = rand_str("abcdefghijklmnopqrstuvwxyz", 200, 300)
    pairs.append((s, s))
pairs.append(("a" * 250 + "xyz", "a" * 250 + "xyz"))
# Autojunk at work: "a" is popular in b, so only the "b"s can start a match.
pairs.append(("b" + "a" * 250, "a" * 250 + "b"))
pairs.append(("a" * 120 + "b" + "a" * 130, "a" * 250 + "b"))
pairs.append(("a" * 250 + "b", "b" + "a" * 250))
pairs.append(("", ""))
pairs.append(("héllo wörld", "hello world"))
pairs.append(("日本語テキスト", "日本語のテキスト"))

ratios = [
    {"a": a, "b": b, "ratio": difflib.SequenceMatcher(None, a, b).ratio()}
    for a, b in pairs
]

close = []
for word, cands, n, cutoff in [
    ("evl", ["list", "eval", "env"], 1, 0.6),
    ("zzzzzz", ["list", "eval", "env"], 1, 0.6),
    ("abcd", ["abce", "abcf", "abcg", "xyz"], 2, 0.6),
    ("abcd", ["abcf", "abce"], 1, 0.6),
    ("ab", ["ba", "ab", "ab"], 3, 0.0),
    ("appel", ["ape", "apple", "peach", "puppy"], 3, 0.6),
    ("wheel", ["while", "which", "wheat", "whale"], 4, 0.0),
    ("x" * 230 + "abc", ["x" * 230 + "abc", "x" * 229 + "abd", "abc"], 3, 0.0),
]:
    close.append({"word": word, "candidates": cands, "n": n, "cutoff": cutoff,
                  "want": difflib.get_close_matches(word, cands, n=n, cutoff=cutoff)})
# Random candidate lists, including long words, checked with several cutoffs.
for _ in range(80):
    word = rand_str("abcde", 1, 14) if rng.random() < 0.8 else rand_str("ab cd", 195, 240)
    cands = [rand_str("abcde", 0, 16) if len(word) < 100 else rand_str("ab cd", 150, 260)
             for _ in range(rng.randint(0, 12))]
    n = rng.randint(1, 4)
    cutoff = rng.choice([0.0, 0.3, 0.5, 0.6, 0.8, 1.0])
    close.append({"word": word, "candidates": cands, "n": n, "cutoff": cutoff,
                  "want": difflib.get_close_matches(word, cands, n=n, cutoff=cutoff)})

print(json.dumps({"ratios": ratios, "close_matches": close}, ensure_ascii=False, indent=0))
