// The response cache through an official SDK, unchanged: OpenAI's or
// Anthropic's (SLUICE_API), on SLUICE_MODEL, a model with the cache on.
// Keys sk-cache-a and sk-cache-a2 are one tenant's, sk-cache-b
// another's. The Go test (cache_test.go) counts the provider's calls.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { step } from './lib.mjs';

const api = process.env.SLUICE_API;
const model = process.env.SLUICE_MODEL;
const base = process.env.SLUICE_URL;

function client(key) {
  return api === 'openai'
    ? new OpenAI({ baseURL: base + '/v1', apiKey: key, maxRetries: 0 })
    : new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
}

const params = (question) => ({ model, max_tokens: 50, temperature: 0, messages: [{ role: 'user', content: question }] });

// whole asks for a whole answer and returns its text and X-Sluice-Cache.
async function whole(c, question, headers = {}) {
  if (api === 'openai') {
    const { data, response } = await c.chat.completions.create(params(question), { headers }).withResponse();
    assert.equal(data.choices[0].finish_reason, 'stop');
    assert.ok(data.usage.completion_tokens > 0, JSON.stringify(data.usage));
    return { text: data.choices[0].message.content, cache: response.headers.get('x-sluice-cache'), age: response.headers.get('age') };
  }
  const { data, response } = await c.messages.create(params(question), { headers }).withResponse();
  assert.equal(data.stop_reason, 'end_turn');
  assert.ok(data.usage.output_tokens > 0, JSON.stringify(data.usage));
  return { text: data.content.map((b) => b.text).join(''), cache: response.headers.get('x-sluice-cache'), age: response.headers.get('age') };
}

// streamed asks for the same as a stream and reads it as the SDK does.
async function streamed(c, question, headers = {}) {
  if (api === 'openai') {
    const { data: s, response } = await c.chat.completions
      .create({ ...params(question), stream: true, stream_options: { include_usage: true } }, { headers }).withResponse();
    let text = '', finish = null, usage = null;
    for await (const ch of s) {
      assert.equal(ch.object, 'chat.completion.chunk');
      if (ch.choices[0]?.delta?.content) text += ch.choices[0].delta.content;
      if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason;
      if (ch.usage) usage = ch.usage;
    }
    assert.equal(finish, 'stop');
    assert.ok(usage && usage.completion_tokens > 0, 'no usage chunk');
    return { text, cache: response.headers.get('x-sluice-cache') };
  }
  const { data: s, response } = await c.messages.create({ ...params(question), stream: true }, { headers }).withResponse();
  let text = '', stop = null, out = 0;
  for await (const ev of s) {
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    if (ev.type === 'message_delta') {
      stop = ev.delta.stop_reason;
      out = ev.usage.output_tokens;
    }
  }
  assert.equal(stop, 'end_turn');
  assert.ok(out > 0, 'no output count');
  return { text, cache: response.headers.get('x-sluice-cache') };
}

const a = client('sk-cache-a');
let first;

await step('miss then hit', async () => {
  first = await whole(a, 'What is a sluice?');
  assert.equal(first.cache, 'miss');
  assert.ok(first.text.length > 0, 'empty answer');
  const again = await whole(a, 'What is a sluice?');
  assert.equal(again.cache, 'hit');
  assert.ok(again.age !== null, 'no Age header');
  assert.equal(again.text, first.text);
});

await step('streamed hit', async () => {
  const s = await streamed(a, 'What is a sluice?');
  assert.equal(s.cache, 'hit');
  assert.equal(s.text, first.text);
});

await step('same tenant, another key', async () => {
  const r = await whole(client('sk-cache-a2'), 'What is a sluice?');
  assert.equal(r.cache, 'hit');
  assert.equal(r.text, first.text);
});

await step('another tenant', async () => {
  const r = await whole(client('sk-cache-b'), 'What is a sluice?');
  assert.equal(r.cache, 'miss');
});

await step('streamed miss, whole hit', async () => {
  const s = await streamed(a, 'And a weir?');
  assert.equal(s.cache, 'miss');
  const w = await whole(a, 'And a weir?');
  assert.equal(w.cache, 'hit');
  assert.equal(w.text, s.text);
});

await step('no-store', async () => {
  for (let i = 0; i < 2; i++) {
    const r = await whole(a, 'And a lock?', { 'Cache-Control': 'no-store' });
    assert.equal(r.cache, 'miss');
  }
  const r = await whole(a, 'And a lock?');
  assert.equal(r.cache, 'miss', 'a no-store answer was stored');
});
