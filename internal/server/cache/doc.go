// Package cache keeps complete answers to requests and names them by the
// request's meaning, for the gateway's response cache (docs/CACHE.md).
//
// # Goals
//
//   - One key per request meaning, within one tenant: KeyOf reads the
//     body with a real JSON tokenizer, so key order, whitespace, escapes
//     and a number's spelling do not split entries, and hashes the
//     tenant's scope first, so no request of one tenant can name
//     another's answer. Fields that only say how the answer is
//     delivered (stream, stream_options) or who asks (user, metadata)
//     are left out (Ignored); every other field, known to Sluice or
//     not, is in.
//   - A bound in bytes: Memory drops the least recently used entries,
//     Redis refuses writes past what its window allows (redis.go).
//   - Entries past their TTL kept up to a stale allowance, so a caller
//     may answer from one when nothing fresher can be had; Get returns
//     them and the caller judges their age (Entry.Fresh, Entry.Age).
//
// # Non-goals
//
// Deciding what is cacheable (a complete answer, a model and key that
// allow it, a request's Cache-Control) is the gateway's; so is turning
// a stored answer into a stream. Semantic (similar-prompt) matching is
// not done: an answer is only ever given to the same request.
//
// # Organisation
//
// key.go reads requests into keys; control.go reads Cache-Control;
// entry.go is the stored answer and the Store interface; memory.go and
// redis.go are the two stores.
package cache
