package metrics

import "github.com/prometheus/client_golang/prometheus"

// IdempotencyState is the idempotency keeper's state at a scrape.
type IdempotencyState struct {
	// InFlight is the keys with a generation in this process, and
	// Participants the requests reading them (leaders' clients too).
	InFlight     int
	Participants int64
	// Stored and StoredBytes are the answers held for replay and their
	// size; Memory is false when they are in the fleet's Redis, whose
	// totals this replica does not know (then they are not exported).
	Stored      int
	StoredBytes int64
	Memory      bool
}

// SetIdempotency makes the idempotency gauges read f.
func (m *Metrics) SetIdempotency(f func() IdempotencyState) { m.idem.Store(&f) }

var (
	idemInFlightDesc = prometheus.NewDesc("sluice_idempotency_in_flight",
		"Idempotency keys with a generation running in this process, which duplicates join.", nil, nil)
	idemParticipantsDesc = prometheus.NewDesc("sluice_idempotency_participants",
		"Requests reading a shared generation in this process, leaders' clients included: less sluice_idempotency_in_flight, the duplicates served without a generation of their own.", nil, nil)
	idemStoredDesc = prometheus.NewDesc("sluice_idempotency_stored_entries",
		"Answers held in memory for replay (idempotency.max_entries bounds them).", nil, nil)
	idemBytesDesc = prometheus.NewDesc("sluice_idempotency_stored_bytes",
		"Memory the answers held for replay take (idempotency.max_bytes bounds it).", nil, nil)
)

func (m *Metrics) registerIdempotency() {
	m.Idempotency = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_idempotency_total",
		Help: "Requests with an Idempotency-Key, by result: leader (generated), joined (shared a generation in flight), replayed (got a stored answer), conflict (the key was used with another body: 422), in_progress (in flight where it cannot be joined: 409), invalid (a malformed key: 400).",
	}, []string{"result"})
	m.Registry.MustRegister(m.Idempotency, idemCollector{m})
}

// idemCollector exports the idempotency gauges at scrape time.
type idemCollector struct{ m *Metrics }

func (c idemCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- idemInFlightDesc
	ch <- idemParticipantsDesc
	ch <- idemStoredDesc
	ch <- idemBytesDesc
}

func (c idemCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.m.idem.Load()
	if f == nil {
		return
	}
	s := (*f)()
	ch <- prometheus.MustNewConstMetric(idemInFlightDesc, prometheus.GaugeValue, float64(s.InFlight))
	ch <- prometheus.MustNewConstMetric(idemParticipantsDesc, prometheus.GaugeValue, float64(s.Participants))
	if s.Memory {
		ch <- prometheus.MustNewConstMetric(idemStoredDesc, prometheus.GaugeValue, float64(s.Stored))
		ch <- prometheus.MustNewConstMetric(idemBytesDesc, prometheus.GaugeValue, float64(s.StoredBytes))
	}
}
