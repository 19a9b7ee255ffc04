// What the scripts of this directory share: the environment they run
// in, the steps they print, and the recording marker.
//
// SLUICE_URL is the gateway's root. With SLUICE_RECORD set, SLUICE_URL
// is instead a recorder in front of the gateway (TestFrameworks, see
// frameworks_test.go), and each step first names itself to it, so that
// the request bodies that follow are kept under the step's name.
export const url = process.env.SLUICE_URL;
export const model = process.env.SLUICE_MODEL;

// step runs one case and prints "ok NAME", or "fail NAME: ERROR" and the
// error's details; a failed case fails the process but not the cases
// after it, so that one run says which of them a target serves.
export async function step(name, fn) {
  if (!wanted(name)) return;
  try {
    if (process.env.SLUICE_RECORD) {
      const r = await fetch(`${url}/__record`, { method: 'POST', body: name });
      if (!r.ok) throw new Error(`the recorder refused step ${name}: ${r.status}`);
    }
    await fn();
    console.log('ok', name);
  } catch (e) {
    process.exitCode = 1;
    console.log(`fail ${name}: ${e?.message ?? e}`);
    console.log(e);
  }
}

// wanted says whether a step runs: every step, or those SLUICE_CASES
// names (comma-separated).
const only = process.env.SLUICE_CASES ? process.env.SLUICE_CASES.split(',') : null;
function wanted(name) {
  return only === null || only.includes(name);
}

// The mock answers a tool result with "tool result: " and its text, and
// fills a structured answer's schema with the plainest values it
// accepts: strings "mock", arrays of one item, an enum's first value.
export const toolResult = 'sunny, 21C';
export const question = 'What is the weather in Paris?';
export const moods = ['calm', 'stormy'];
export const structured = { mood: 'calm', tags: ['mock'], title: 'mock' };
