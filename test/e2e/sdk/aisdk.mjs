// The Vercel AI SDK (package ai, with @ai-sdk/openai and
// @ai-sdk/anthropic), unchanged and at its defaults, against Sluice: a
// generation, a stream, a conversation's second turn, a tool round trip
// whole and streamed, a two-step
// agent loop whole and streamed, structured output whole and streamed
// (generateText/streamText with Output.object, and generateObject and
// streamObject), reasoning, embeddings, and errors.
//
// SLUICE_PROVIDER picks the provider: openai-chat (openai.chat(model),
// POST /v1/chat/completions), openai-responses (the default openai(model),
// POST /v1/responses) or anthropic (POST /v1/messages). SLUICE_MODEL is a
// model the gateway serves; SLUICE_REASONING_MODEL, when set, the name to
// reason with (the OpenAI provider treats a model as a reasoning model by
// its name); SLUICE_EMBED_MODEL, when set, an embedding
// model; SLUICE_SHED_MODEL, when set, a model whose every request the
// gateway sheds. Run by go test ./test/e2e -run Frameworks (lib.mjs has
// the rest of the environment).
import assert from 'node:assert/strict';
import {
  APICallError, Output, RetryError, embed, embedMany, generateObject, generateText, jsonSchema,
  stepCountIs, streamObject, streamText, tool,
} from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { z } from 'zod';
import { model as modelName, moods, question, step, structured, toolResult, url } from './lib.mjs';

const kind = process.env.SLUICE_PROVIDER;
const openai = createOpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-client' });
const anthropic = createAnthropic({ baseURL: `${url}/v1`, apiKey: 'sk-client' });
const languageModel = {
  'openai-chat': (m) => openai.chat(m),
  'openai-responses': (m) => openai(m),
  anthropic: (m) => anthropic(m),
}[kind];
assert.ok(languageModel, `SLUICE_PROVIDER is ${kind}: want openai-chat, openai-responses or anthropic`);
const model = languageModel(modelName);

const weatherInput = z.object({ city: z.string().describe('The city') });
// Without execute, the caller runs the tool and sends its result back.
const weatherCall = tool({ description: 'The weather in a city', inputSchema: weatherInput });
const weatherTool = tool({ description: 'The weather in a city', inputSchema: weatherInput, execute: async () => toolResult });
const answer = z.object({ title: z.string(), tags: z.array(z.string()), mood: z.enum(moods) });

// drain reads a fullStream to its end and returns its parts' types and
// text; an error part fails the step with the error the SDK met.
async function drain(stream) {
  const types = [];
  let text = '';
  for await (const part of stream) {
    types.push(part.type);
    if (part.type === 'error') throw part.error;
    if (part.type === 'text-delta') text += part.text;
  }
  return { types, text };
}

function checkUsage(usage) {
  assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0, `usage ${JSON.stringify(usage)}`);
}

// First, while the call that keeps the shed model's one slot busy is
// young: the gateway's Retry-After is the time until a slot frees, and
// a call running past every recent one is expected to run as long again.
if (process.env.SLUICE_SHED_MODEL) {
  await step('shed', async () => {
    // The gateway sheds every try, with Retry-After, which the SDK waits
    // out (under a minute; its default is two retries) before it gives up.
    const status = kind === 'anthropic' ? 529 : 503;
    await assert.rejects(
      generateText({ model: languageModel(process.env.SLUICE_SHED_MODEL), prompt: 'hello' }),
      (e) => RetryError.isInstance(e) && e.reason === 'maxRetriesExceeded' && e.errors.length === 3 &&
        APICallError.isInstance(e.lastError) && e.lastError.statusCode === status &&
        Number(e.lastError.responseHeaders['retry-after']) >= 1,
    );
  });
}

await step('generate', async () => {
  const r = await generateText({ model, system: 'Be brief.', prompt: 'hello' });
  assert.ok(r.text.length > 0, 'empty answer');
  assert.equal(r.finishReason, 'stop');
  checkUsage(r.usage);
  assert.ok(r.response.modelId, 'no model id');
});

await step('stream', async () => {
  const s = streamText({ model, system: 'Be brief.', prompt: 'hello' });
  const { types, text } = await drain(s.fullStream);
  assert.ok(text.length > 0, 'no text streamed');
  for (const t of ['start', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish']) {
    assert.ok(types.includes(t), `no ${t} part in ${types}`);
  }
  assert.equal(await s.finishReason, 'stop');
  checkUsage(await s.usage);
});

// A second turn sends the first answer back. The Responses API lets it
// point at the answer's stored items instead (item_reference), and the
// SDK does so whenever store is on, its default; with store: false it
// sends the items themselves.
async function conversation(providerOptions) {
  const first = await generateText({ model, system: 'Be brief.', prompt: 'hello', providerOptions });
  const messages = [{ role: 'user', content: 'hello' }, ...first.response.messages, { role: 'user', content: 'Say it again.' }];
  const second = await generateText({ model, system: 'Be brief.', messages, providerOptions });
  assert.ok(second.text.length > 0, 'empty answer');
  assert.equal(second.finishReason, 'stop');
}

await step('conversation', async () => {
  await conversation();
  if (kind === 'openai-responses') await conversation({ openai: { store: false } });
});

// roundTrip checks the model's call, sends the tool's result back as the
// caller would, and checks the answer to it.
async function roundTrip(first, again) {
  assert.equal(first.finishReason, 'tool-calls');
  assert.equal(first.toolCalls.length, 1);
  const call = first.toolCalls[0];
  assert.equal(call.toolName, 'get_weather');
  assert.deepEqual(call.input, { city: 'mock' });
  const messages = [{ role: 'user', content: question }, ...first.response.messages, {
    role: 'tool',
    content: [{ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'text', value: toolResult } }],
  }];
  const final = await again(messages);
  assert.equal(final.finishReason, 'stop');
  assert.ok(final.text.startsWith(`tool result: ${toolResult}`), final.text);
}

await step('tools', async () => {
  const tools = { get_weather: weatherCall };
  const first = await generateText({ model, tools, prompt: question });
  await roundTrip(first, (messages) => generateText({ model, tools, messages }));
});

await step('tools streamed', async () => {
  const tools = { get_weather: weatherCall };
  const settle = async (s) => {
    const { types } = await drain(s.fullStream);
    return { types, finishReason: await s.finishReason, toolCalls: await s.toolCalls, response: await s.response, text: await s.text };
  };
  const first = await settle(streamText({ model, tools, toolChoice: 'required', prompt: question }));
  for (const t of ['tool-input-start', 'tool-input-delta', 'tool-input-end', 'tool-call']) {
    assert.ok(first.types.includes(t), `no ${t} part in ${first.types}`);
  }
  await roundTrip(first, (messages) => settle(streamText({ model, tools, messages })));
});

// The SDK runs the tool itself between the two steps.
function checkAgent(r) {
  assert.equal(r.steps.length, 2);
  assert.equal(r.steps[0].finishReason, 'tool-calls');
  assert.deepEqual(r.steps[0].toolResults.map((t) => t.output), [toolResult]);
  assert.equal(r.finishReason, 'stop');
  assert.ok(r.text.startsWith(`tool result: ${toolResult}`), r.text);
}

await step('agent', async () => {
  checkAgent(await generateText({ model, tools: { get_weather: weatherTool }, stopWhen: stepCountIs(2), prompt: question }));
});

await step('agent streamed', async () => {
  const s = streamText({ model, tools: { get_weather: weatherTool }, stopWhen: stepCountIs(2), prompt: question });
  const { types } = await drain(s.fullStream);
  assert.equal(types.filter((t) => t === 'finish-step').length, 2, `${types}`);
  assert.ok(types.includes('tool-result'), `no tool-result part in ${types}`);
  checkAgent({ steps: await s.steps, finishReason: await s.finishReason, text: await s.text });
});

await step('structured', async () => {
  const r = await generateText({ model, output: Output.object({ schema: answer }), prompt: 'Describe the weather.' });
  assert.deepEqual(r.output, structured);
});

await step('structured streamed', async () => {
  const s = streamText({ model, output: Output.object({ schema: answer }), prompt: 'Describe the weather.' });
  let partials = 0;
  for await (const p of s.partialOutputStream) {
    assert.equal(typeof p, 'object');
    partials++;
  }
  assert.ok(partials > 0, 'no partial output');
  assert.deepEqual(await s.output, structured);
});

await step('object', async () => {
  const r = await generateObject({ model, schema: answer, prompt: 'Describe the weather.' });
  assert.deepEqual(r.object, structured);
});

await step('object streamed', async () => {
  // A JSON schema written out, as a caller without zod gives it.
  const schema = jsonSchema({
    type: 'object',
    properties: { title: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } }, mood: { type: 'string', enum: moods } },
    required: ['title', 'tags', 'mood'],
    additionalProperties: false,
  });
  const s = streamObject({ model, schema, prompt: 'Describe the weather.' });
  for await (const p of s.partialObjectStream) assert.equal(typeof p, 'object');
  assert.deepEqual(await s.object, structured);
});

await step('reasoning', async () => {
  const providerOptions = kind === 'anthropic'
    ? { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } }
    : { openai: { reasoningEffort: 'low' } };
  const m = process.env.SLUICE_REASONING_MODEL ? languageModel(process.env.SLUICE_REASONING_MODEL) : model;
  const s = streamText({ model: m, system: 'Be brief.', prompt: 'hello', providerOptions });
  const { text } = await drain(s.fullStream);
  assert.ok(text.length > 0, 'no text streamed');
  assert.equal(await s.finishReason, 'stop');
});

if (process.env.SLUICE_EMBED_MODEL) {
  await step('embeddings', async () => {
    const em = openai.embedding(process.env.SLUICE_EMBED_MODEL);
    const one = await embed({ model: em, value: 'hello' });
    assert.ok(one.embedding.length > 0 && one.embedding.every(Number.isFinite), 'no embedding');
    const many = await embedMany({ model: em, values: ['hello', 'world'] });
    assert.equal(many.embeddings.length, 2);
    assert.notDeepEqual(many.embeddings[0], many.embeddings[1]);
  });
}

await step('errors', async () => {
  // An unknown model is not retried: the provider's own APICallError.
  await assert.rejects(
    generateText({ model: languageModel('no-such-model'), prompt: 'hello' }),
    (e) => APICallError.isInstance(e) && e.statusCode === 404 && !e.isRetryable,
  );
});
