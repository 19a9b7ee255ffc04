// Package idempotency makes a request that carries an Idempotency-Key
// cost one generation however many times it is sent: duplicates that
// arrive while the original runs share its answer as it streams, and
// duplicates that arrive later get the stored answer.
//
// # Goals
//
//   - One upstream generation per key (within a scope: a tenant), and
//     every caller gets the same answer: status, headers, body, each
//     streamed to it at its own pace from the first byte.
//   - A generation runs while anybody still wants it: the first caller
//     leaving does not end it for the others, and the last one leaving
//     ends it at once (the gateway's upstream call is cancelled).
//   - Only successes are replayed. A failure reaches every caller that
//     shared it, once, and the key is free again as soon as it ends.
//   - A key reused for a different request is refused, never answered
//     with another request's answer.
//   - Bounded memory: stored answers by count, bytes and TTL; a flight
//     holds about one stored answer's cap however long its answer is.
//   - Nothing on a request without a key.
//
// # Non-goals
//
//   - Joining a flight on another replica. A duplicate that reaches
//     another replica while the original runs is refused with
//     InProgress (409 and Retry-After in the gateway), and gets the
//     stored answer once the original has finished. Streaming bytes
//     between replicas would put Redis on every token's path.
//   - Exactly-once generation. A replica that dies mid-generation
//     frees its keys when their claims expire, and a store that cannot
//     be reached is taken as empty: the request is decided by this
//     process alone. Both can mean a second generation; neither can
//     mean a wrong answer.
//   - Storing failures, or answers larger than the per-entry cap.
//
// # Organisation
//
//   - Key and Fingerprint (key.go): what names a request (the SHA-256
//     of its scope and key) and what identifies its content (method,
//     path and body). ParseHeader validates the header.
//   - Flight (flight.go): one generation. The leader's handler writes
//     into its Recorder, an http.ResponseWriter; each participant
//     reads it through a Reader (Head, then Read to the end, then
//     Leave). The flight's Context is the generation's.
//   - Keeper and Flights (keeper.go): Begin decides a request (Lead,
//     Join, Replay, Conflict, InProgress); Finish settles the key (stores
//     a success, releases the claim) and then ends the led flight; Known
//     says, without a store round trip, whether a key's answer is
//     already on its way (a request about to be shed need not be).
//     Flights is the table of flights in one process, which a reloaded
//     configuration shares.
//   - Store (store.go): where completed answers are kept. Memory
//     (memory.go) is a process's LRU, bounded by entries, bytes and
//     TTL; Redis (redis.go) is the fleet's, and also marks each key in
//     flight so that other replicas refuse its duplicates.
//
// # Usage
//
//	t := keeper.Begin(r.Context(), idempotency.NewKey(tenant, key), idempotency.FingerprintOf(method, path, body), ttl)
//	switch t.Role {
//	case idempotency.Lead:
//		go copyToClient(w, t.Reader)   // the leader's client is a reader too
//		generate(t.Flight.Recorder(), r.WithContext(t.Flight.Context()))
//		keeper.Finish(t.Flight, end, note)
//	case idempotency.Join, idempotency.Replay:
//		copyToClient(w, t.Reader)       // Head, Read until io.EOF, Leave
//	case idempotency.Conflict, idempotency.InProgress:
//		refuse(w, t)
//	}
//
// A participant whose client leaves calls Reader.Leave; one that reads
// to the end calls it too, so the flight lets go of the bytes it read.
//
// # Locking
//
// Flights.mu is taken before Flight.mu, never the other way round. No
// lock is held across a store call or a write to a client.
package idempotency
