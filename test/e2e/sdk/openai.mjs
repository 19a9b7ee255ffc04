// The official OpenAI Node SDK, unchanged, against Sluice: chat, a
// stream, a tool round trip (whole and streamed), a JSON-schema answer,
// reasoning and typed errors.
// SLUICE_URL is the gateway, SLUICE_MODEL a model served by a provider
// of the other API (Sluice translates). Run by go test ./e2e -run SDK.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { step } from './lib.mjs';

const client = new OpenAI({ baseURL: process.env.SLUICE_URL + '/v1', apiKey: 'sk-client', maxRetries: 0 });
const model = process.env.SLUICE_MODEL;
const ask = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello' }];
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

const weather = { type: 'object', properties: { city: { type: 'string' }, temp: { type: 'number' } }, required: ['city', 'temp'] };

await step('chat', async () => {
  const r = await client.chat.completions.create({ model, messages: ask, max_tokens: 50 });
  assert.equal(r.object, 'chat.completion');
  assert.ok(r.model, 'no model');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(r.choices[0].message.content.length > 0, 'empty answer');
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0, JSON.stringify(r.usage));
});

await step('stream', async () => {
  const s = await client.chat.completions.create({ model, messages: ask, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const c of s) {
    chunks++;
    assert.equal(c.object, 'chat.completion.chunk');
    const ch = c.choices[0];
    if (ch?.delta?.content) text += ch.delta.content;
    if (ch?.finish_reason) finish = ch.finish_reason;
    if (c.usage) usage = c.usage;
  }
  assert.ok(chunks > 3, `only ${chunks} chunks`);
  assert.ok(text.length > 0, 'no text streamed');
  assert.equal(finish, 'stop');
  assert.ok(usage && usage.completion_tokens > 0, 'no usage chunk');
});

// The model calls the tool, the client runs it and sends the result
// back, the model answers (the mock's answer starts with the result).
async function roundTrip(first) {
  const msg = first.choices[0].message;
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.tool_calls.length, 1);
  const call = msg.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'mock' });
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }, msg,
    { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' }];
  const final = await client.chat.completions.create({ model, messages, tools });
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.ok(final.choices[0].message.content.startsWith('tool result: sunny, 21C'), final.choices[0].message.content);
}

await step('tools', async () => {
  await roundTrip(await client.chat.completions.create({
    model, tools, messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  }));
});

await step('tools streamed', async () => {
  // The SDK's stream helper assembles the tool call from its deltas.
  const s = client.chat.completions.stream({
    model, tools, tool_choice: 'required', messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  });
  await roundTrip(await s.finalChatCompletion());
});

await step('json schema', async () => {
  // The mock fills each property of the schema: strings "mock", numbers 1.
  const r = await client.chat.completions.create({
    model, messages: ask, response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: weather } },
  });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.deepEqual(JSON.parse(r.choices[0].message.content), { city: 'mock', temp: 1 });
});

await step('reasoning', async () => {
  const r = await client.chat.completions.create({ model, messages: ask, reasoning_effort: 'low' });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(r.choices[0].message.content.length > 0, 'empty answer');
});

await step('errors', async () => {
  await assert.rejects(
    client.chat.completions.create({ model, messages: ask }, { headers: { 'X-Mock-Fail': '429' } }),
    (e) => e instanceof OpenAI.RateLimitError && e.status === 429 && e.error?.type !== undefined,
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages: ask }, { headers: { 'X-Mock-Fail': '400' } }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400,
  );
  // Sluice's own refusal of what the other API cannot do names the parameter.
  await assert.rejects(
    client.chat.completions.create({ model, messages: ask, n: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'n',
  );
});
