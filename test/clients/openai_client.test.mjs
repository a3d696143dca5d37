// The official OpenAI Node client against a gym model server: Responses and
// Chat Completions, each whole and streamed. GYM_MODEL_URL is the server's
// OpenAI base URL (…/v1); the Go test in responses_api_models/openai_model
// sets it, with a fake upstream behind the server that answers
// "Hello from upstream" as model "served-model".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = process.env.GYM_MODEL_URL;
const skip = baseURL ? false : 'GYM_MODEL_URL is not set';
// Retries would hide a failure of the server under test.
const client = new OpenAI({ baseURL, apiKey: 'client-key', maxRetries: 0 });

test('responses', { skip }, async () => {
  const r = await client.responses.create({ model: 'whatever-the-client-says', input: 'hi' });
  assert.equal(r.model, 'served-model');
  assert.equal(r.output_text, 'Hello from upstream');
  // The provider sent reasoning as output_text; gym fixed the discriminator.
  assert.equal(r.output[0].type, 'reasoning');
  assert.equal(r.output[0].content[0].type, 'reasoning_text');
});

test('responses streaming', { skip }, async () => {
  const stream = await client.responses.create({ model: 'x', input: 'hi', stream: true });
  const types = [];
  let text = '';
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
  }
  assert.equal(text, 'Hello from upstream');
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
});

test('chat completions', { skip }, async () => {
  const c = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(c.model, 'served-model');
  assert.equal(c.choices[0].message.content, 'Hello from upstream');
  assert.equal(c.choices[0].finish_reason, 'stop');
});

test('chat completions streaming', { skip }, async () => {
  const stream = await client.chat.completions.create({
    model: 'x',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, 'Hello from upstream');
  assert.equal(finish, 'stop');
});
