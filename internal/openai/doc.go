// Package openai holds gym's rules for OpenAI and Anthropic payloads: the
// provider reasoning fix, usage arithmetic that keeps "not reported" apart
// from zero, the Responses ⇄ Chat Completions and Anthropic Messages ⇄
// Responses conversions that NeMo Gym's chat-only backends perform, and the
// SSE streams a buffered (non-streaming) upstream call is replayed as.
//
// Every function takes and returns raw JSON. Bodies are never decoded into
// structs and re-encoded, because a struct forgets what it does not declare:
// unknown fields, new item types and key order must survive a model server
// (DESIGN "HTTP payloads"). A rule reads only the fields it is about and
// rewrites only their bytes; where nothing applies the input comes back
// byte for byte. Nothing here does I/O or keeps state.
//
// # Where this differs from NeMo Gym on purpose
//
//   - Usage sums keep an unknown detail count unknown whichever turn lacks
//     it, a whole absent details object included (errata L3; NeMo Gym's sum
//     depends on turn order there).
//   - instructions reach a chat backend as a system message; NeMo Gym's
//     converter does not carry them at all.
//   - Only `<think>` blocks that open the content are reasoning; NeMo Gym's
//     regular expression also strips them from the middle of an answer.
//   - Upstream reasoning_content/reasoning always becomes a reasoning item;
//     vllm_model asserts it is absent when its reasoning parser is off.
//   - Token data replayed for training belongs to the assistant turn it came
//     with; NeMo Gym carries the last seen data on to later turns.
//   - A request's programmatic tool calling, and Responses-only fields, are
//     rejected with a 400-worthy error instead of failing inside the
//     backend or vanishing silently.
package openai
