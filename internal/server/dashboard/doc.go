// Package dashboard serves Sluice's live dashboard on the admin listener:
// a page of charts over the last 15 minutes, and the JSON it draws from.
//
// Goals: an operator in a brownout sees, on one screen, the concurrency
// limits, the queues, latency, sheds, each provider's breaker and the
// second calls against their budgets, and a verdict on where the pressure
// comes from (Classify). Non-goals: long-term storage and alerting; that
// is Prometheus's job (deploy/).
//
// Organisation:
//   - Recorder keeps a bounded ring of per-second Samples (15 minutes) and
//     the events worth marking on the time axis (breaker transitions,
//     verdict changes, marks a host adds, such as sluice demo's scripted
//     brownout). It costs the request path nothing: once a second it
//     gathers the gateway's Prometheus registry, the state metrics already
//     export, and derives rates from the counters' growth.
//   - Classify is a pure function from Signals (derived from the recent
//     samples) to a Verdict: provider limits, slow generations, retry
//     storm, local saturation, or calm, with the evidence.
//   - Handler serves the page and its assets, embedded in the binary (no
//     CDN, no external fonts; uPlot is vendored under static/vendor), and
//     GET data.json?since=UNIX_MS, the samples and events after since.
//
// Usage: a host builds a Recorder over its registry, calls Run in a
// goroutine until it stops serving, and mounts Handler under /dashboard/.
package dashboard
