// The official Anthropic Node SDK, unchanged, against Sluice: a message,
// a stream, a tool round trip (whole and streamed), a JSON-schema answer,
// reasoning and typed errors.
// SLUICE_URL is the gateway, SLUICE_MODEL a model served by a provider
// of the other API (Sluice translates). Run by go test ./e2e -run SDK.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { step } from './lib.mjs';

const client = new Anthropic({ baseURL: process.env.SLUICE_URL, apiKey: 'sk-client', maxRetries: 0 });
const model = process.env.SLUICE_MODEL;
const ask = { model, max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user', content: 'hello' }] };
const tools = [{
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];
const question = { role: 'user', content: 'What is the weather in Paris?' };

// Anthropic's structured outputs take only closed objects.
const weather = {
  type: 'object', properties: { city: { type: 'string' }, temp: { type: 'number' } }, required: ['city', 'temp'], additionalProperties: false,
};

await step('chat', async () => {
  const r = await client.messages.create(ask);
  assert.equal(r.type, 'message');
  assert.equal(r.role, 'assistant');
  assert.ok(r.model, 'no model');
  assert.equal(r.stop_reason, 'end_turn');
  assert.equal(r.content[0].type, 'text');
  assert.ok(r.content[0].text.length > 0, 'empty answer');
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0, JSON.stringify(r.usage));
});

await step('stream', async () => {
  const s = await client.messages.create({ ...ask, stream: true });
  const seen = new Set();
  let text = '', stop = null;
  for await (const ev of s) {
    seen.add(ev.type);
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    if (ev.type === 'message_delta') stop = ev.delta.stop_reason;
  }
  for (const t of ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']) {
    assert.ok(seen.has(t), `no ${t} event`);
  }
  assert.ok(text.length > 0, 'no text streamed');
  assert.equal(stop, 'end_turn');
});

// The model calls the tool, the client runs it and sends the result
// back, the model answers (the mock's answer starts with the result).
async function roundTrip(first) {
  assert.equal(first.stop_reason, 'tool_use');
  const uses = first.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  assert.equal(uses[0].name, 'get_weather');
  assert.deepEqual(uses[0].input, { city: 'mock' });
  const messages = [question, { role: 'assistant', content: first.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id, content: 'sunny, 21C' }] }];
  const final = await client.messages.create({ model, max_tokens: 100, tools, messages });
  assert.equal(final.stop_reason, 'end_turn');
  assert.ok(final.content[0].text.startsWith('tool result: sunny, 21C'), final.content[0].text);
}

await step('tools', async () => {
  await roundTrip(await client.messages.create({ model, max_tokens: 100, tools, messages: [question] }));
});

await step('tools streamed', async () => {
  // The SDK's stream helper assembles the tool input from its JSON deltas.
  const s = client.messages.stream({ model, max_tokens: 100, tools, tool_choice: { type: 'any' }, messages: [question] });
  await roundTrip(await s.finalMessage());
});

await step('json schema', async () => {
  // Structured outputs; the mock fills each property of the schema.
  const r = await client.messages.create({ ...ask, output_config: { format: { type: 'json_schema', schema: weather } } });
  assert.equal(r.stop_reason, 'end_turn');
  assert.equal(r.content[0].type, 'text');
  assert.deepEqual(JSON.parse(r.content[0].text), { city: 'mock', temp: 1 });
});

await step('reasoning', async () => {
  // Extended thinking; a thinking block may come before the text.
  const r = await client.messages.create({ ...ask, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } });
  assert.equal(r.stop_reason, 'end_turn');
  const text = r.content.filter((b) => b.type === 'text');
  assert.ok(text.length === 1 && text[0].text.length > 0, JSON.stringify(r.content));
});

await step('errors', async () => {
  await assert.rejects(
    client.messages.create(ask, { headers: { 'X-Mock-Fail': '429' } }),
    (e) => e instanceof Anthropic.RateLimitError && e.status === 429 && e.error?.type === 'error',
  );
  await assert.rejects(
    client.messages.create(ask, { headers: { 'X-Mock-Fail': '400' } }),
    (e) => e instanceof Anthropic.BadRequestError && e.status === 400 && e.error?.error?.type === 'invalid_request_error',
  );
});
