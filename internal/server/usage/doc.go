// Package usage keeps Sluice's usage records: per key, team, model (the
// client-facing name), upstream model and UTC day, the requests and
// the billed upstream calls, the input, cached input and output tokens,
// and their cost in micro-dollars, for a finance team's export
// (docs/USAGE.md). The gateway adds one call at a time, from the same
// record its spend and metrics read, so the totals are spend's.
//
// Goals: exact totals across replicas; nothing on the request path but
// a map update under a short lock; an export that streams any span of
// days in the memory of one day; records that outlive a loss of the
// shared store's data, or are marked missing, never silently. Non-goals: rates and alerting (the
// Prometheus counters sluice_tokens_total and sluice_cost_total stay
// for that), and per-request records (the request log has them).
//
// Organisation:
//   - Recorder aggregates records in memory (Add, called where the
//     gateway records an upstream call) and flushes them to a Store in the
//     background about once a second (Run); a flush that fails is kept
//     and retried, and memory is bounded by MaxRows (Options).
//   - Store is where records live: Redis hashes, one per day, in which
//     each replica sets its own totals (RedisStore; exact across
//     replicas, a total written twice counted once), a JSON-lines file
//     per day under state.dir (FileStore), or this process's memory
//     (MemoryStore). Each deletes the days past the retention.
//   - With Redis, each replica keeps a ledger of what it wrote (ledger;
//     in memory, or a FileStore in state.dir/usage) and writes it back
//     when the fleet's epoch shows Redis lost its data; what no running
//     replica holds is marked (Gap), and the export marks those days
//     incomplete (loss.go says how).
//   - Export streams a span of days as JSON or CSV, grouped by key,
//     team, model or day, one day at a time (ParseQuery, Export,
//     Recorder.ServeHTTP for GET /admin/usage).
package usage
