package fleet

import "time"

// ProbeLease is how long a probe lease lasts without renewal: a few
// probe rounds, so that a prober's death costs the fleet seconds, not
// its provider's recovery. The gateway scales it by the config's time
// scale, as it scales the breaker's probe interval.
const ProbeLease = 5 * time.Second

// EvidenceEvery is how often a replica sends its breaker counts to the
// others: the breaker's bucket width, so the fleet's windows lag by at
// most a bucket. The gateway scales it as it scales the bucket.
const EvidenceEvery = 250 * time.Millisecond
