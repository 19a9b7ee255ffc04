// LangChain JS (@langchain/openai's ChatOpenAI and OpenAIEmbeddings,
// @langchain/anthropic's ChatAnthropic), unchanged and at their
// defaults, against Sluice: a generation, a stream, a tool round trip
// whole and streamed (bindTools, invoke, ToolMessage, invoke again), a
// two-step agent loop whole and streamed, structured output whole and
// streamed (withStructuredOutput), reasoning, embeddings, and errors.
//
// SLUICE_PROVIDER is openai or anthropic. SLUICE_MODEL is a model the
// gateway serves; SLUICE_REASONING_MODEL, when set, the name to reason
// with (ChatOpenAI sends reasoning_effort only for models named as
// OpenAI's reasoning models); SLUICE_EMBED_MODEL, when set, an
// embedding model; SLUICE_SHED_MODEL, when set, a model whose every
// request the gateway sheds; SLUICE_TARGET_API, the API of the target
// that answers (openai or anthropic). Run by go test ./test/e2e -run Frameworks
// (lib.mjs has the rest of the environment).
import assert from 'node:assert/strict';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { AIMessageChunk, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { concat } from '@langchain/core/utils/stream';
import { z } from 'zod';
import { model as modelName, moods, question, step, structured, toolResult, url } from './lib.mjs';

const kind = process.env.SLUICE_PROVIDER;
const chat = {
  openai: (model, fields = {}) => new ChatOpenAI({ model, apiKey: 'sk-client', configuration: { baseURL: `${url}/v1` }, ...fields }),
  anthropic: (model, fields = {}) => new ChatAnthropic({ model, apiKey: 'sk-client', anthropicApiUrl: url, ...fields }),
}[kind];
assert.ok(chat, `SLUICE_PROVIDER is ${kind}: want openai or anthropic`);
const llm = chat(modelName);

const weather = tool(async () => toolResult, {
  name: 'get_weather',
  description: 'The weather in a city',
  schema: z.object({ city: z.string().describe('The city') }),
});
const answer = z.object({ title: z.string(), tags: z.array(z.string()), mood: z.enum(moods) });
const hello = [new SystemMessage('Be brief.'), new HumanMessage('hello')];

// The stop reason, in each provider's words.
const stopped = kind === 'openai' ? ['finish_reason', 'stop'] : ['stop_reason', 'end_turn'];
const calledTool = kind === 'openai' ? ['finish_reason', 'tool_calls'] : ['stop_reason', 'tool_use'];

// checkStop checks why the model stopped. ChatAnthropic's streamed
// chunks do not carry the stop reason (it reads it, and keeps it).
function checkStop(m, [key, want]) {
  if (kind === 'anthropic' && AIMessageChunk.isInstance(m)) return;
  assert.equal(m.response_metadata[key], want, JSON.stringify(m.response_metadata));
}

// An Anthropic stream translated from OpenAI's cannot count the prompt
// in message_start (OpenAI counts it at the end): its tokens come in
// message_delta, where ChatAnthropic does not read them.
const promptCountedLate = kind === 'anthropic' && process.env.SLUICE_TARGET_API === 'openai';

function checkAnswer(m) {
  assert.ok(m.text.length > 0, 'empty answer');
  checkStop(m, stopped);
  const u = m.usage_metadata;
  const late = promptCountedLate && AIMessageChunk.isInstance(m);
  assert.ok((late || u?.input_tokens > 0) && u?.output_tokens > 0, JSON.stringify(u));
}

// streamed concatenates a stream's chunks into one message.
async function streamed(runnable, input) {
  let all, chunks = 0;
  for await (const c of await runnable.stream(input)) {
    all = all === undefined ? c : concat(all, c);
    chunks++;
  }
  assert.ok(chunks > 1, `${chunks} chunks`);
  return all;
}

// First, while the call that keeps the shed model's one slot busy is
// young (the gateway's Retry-After grows with its age, though LangChain
// does not read it on a 503 or 529).
if (process.env.SLUICE_SHED_MODEL) {
  await step('shed', async () => {
    // LangChain retries six times by default, backing off 1 s doubling
    // (times 1 to 2) whatever the Retry-After, then throws the SDK's error.
    const status = kind === 'openai' ? 503 : 529;
    const started = Date.now();
    await assert.rejects(
      chat(process.env.SLUICE_SHED_MODEL).invoke(hello),
      (e) => e.status === status && Number(e.headers?.get?.('retry-after') ?? e.headers?.['retry-after']) >= 1,
    );
    assert.ok(Date.now() - started >= 1000, 'not retried');
  });
}

await step('generate', async () => {
  checkAnswer(await llm.invoke(hello));
});

await step('stream', async () => {
  checkAnswer(await streamed(llm, hello));
});

// roundTrip checks the model's call, sends the tool's result back as a
// ToolMessage, and checks the answer to it.
async function roundTrip(first, again) {
  assert.equal(first.tool_calls.length, 1, JSON.stringify(first));
  const call = first.tool_calls[0];
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(call.args, { city: 'mock' });
  checkStop(first, calledTool);
  const final = await again([new HumanMessage(question), first, new ToolMessage({ content: toolResult, tool_call_id: call.id })]);
  checkAnswer(final);
  assert.ok(final.text.startsWith(`tool result: ${toolResult}`), final.text);
}

await step('tools', async () => {
  const bound = llm.bindTools([weather]);
  await roundTrip(await bound.invoke([new HumanMessage(question)]), (m) => bound.invoke(m));
});

await step('tools streamed', async () => {
  const bound = llm.bindTools([weather], { tool_choice: 'any' });
  const free = llm.bindTools([weather]);
  await roundTrip(await streamed(bound, [new HumanMessage(question)]), (m) => streamed(free, m));
});

// agent runs the loop an agent runs: call the model, run the tools it
// calls, send their results, until it answers (here: two steps).
async function agent(call) {
  const bound = llm.bindTools([weather]);
  const messages = [new HumanMessage(question)];
  for (let i = 0; i < 2; i++) {
    const m = await call(bound, messages);
    messages.push(m);
    if (m.tool_calls.length === 0) break;
    for (const tc of m.tool_calls) messages.push(await weather.invoke(tc));
  }
  assert.deepEqual(messages.map((m) => m.getType()), ['human', 'ai', 'tool', 'ai']);
  assert.equal(messages[2].content, toolResult);
  const final = messages[3];
  checkAnswer(final);
  assert.ok(final.text.startsWith(`tool result: ${toolResult}`), final.text);
}

await step('agent', async () => {
  await agent((bound, messages) => bound.invoke(messages));
});

await step('agent streamed', async () => {
  await agent((bound, messages) => streamed(bound, messages));
});

await step('structured', async () => {
  assert.deepEqual(await llm.withStructuredOutput(answer).invoke('Describe the weather.'), structured);
});

await step('structured streamed', async () => {
  // ChatAnthropic's default method, a forced tool call, cannot be
  // streamed: LangChain's concat keeps the tool_use block (input "") and
  // its input_json_delta blocks apart, and its parser reads the former,
  // whatever the server. Its other method, Anthropic's structured
  // outputs, streams.
  const opts = kind === 'anthropic' ? { method: 'jsonSchema' } : undefined;
  let last, chunks = 0;
  for await (const c of await llm.withStructuredOutput(answer, opts).stream('Describe the weather.')) {
    last = c;
    chunks++;
  }
  assert.ok(chunks > 0, 'nothing streamed');
  assert.deepEqual(last, structured);
});

await step('reasoning', async () => {
  const fields = kind === 'openai'
    ? { reasoning: { effort: 'low' } }
    : { thinking: { type: 'enabled', budget_tokens: 1024 } };
  const m = await streamed(chat(process.env.SLUICE_REASONING_MODEL || modelName, fields), hello);
  assert.ok(m.text.length > 0, 'empty answer');
});

if (process.env.SLUICE_EMBED_MODEL) {
  await step('embeddings', async () => {
    const em = new OpenAIEmbeddings({ model: process.env.SLUICE_EMBED_MODEL, apiKey: 'sk-client', configuration: { baseURL: `${url}/v1` } });
    const one = await em.embedQuery('hello');
    assert.ok(one.length > 0 && one.every(Number.isFinite), 'no embedding');
    const many = await em.embedDocuments(['hello', 'world']);
    assert.equal(many.length, 2);
    assert.notDeepEqual(many[0], many[1]);
  });
}

await step('errors', async () => {
  // An unknown model is not retried: the SDK's own NotFoundError.
  await assert.rejects(
    chat('no-such-model').invoke(hello),
    (e) => e.status === 404 && e.constructor.name === 'NotFoundError',
  );
});
