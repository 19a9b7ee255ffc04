package limit

// DefaultFixedLimit is the limit a zero FixedConfig gets. Netflix's
// FixedLimit has no default (FixedLimit.of(n) requires one); 20 is the
// initialLimit Netflix uses for AIMDLimit, Gradient2Limit and VegasLimit,
// so switching a config between "fixed" and an adaptive kind starts from
// the same place.
const DefaultFixedLimit = 20

// FixedConfig configures Fixed. The yaml name of Limit is "initial".
type FixedConfig struct {
	// Limit is the constant limit; 0 selects DefaultFixedLimit.
	Limit int
}

// Fixed is a constant limit. It exists so the host can run with
// adaptation switched off (a baseline in simulations, or a known
// provider quota) through the same Algorithm seam.
type Fixed struct{ limit int }

var _ Algorithm = (*Fixed)(nil)

// NewFixed returns a Fixed limit.
func NewFixed(cfg FixedConfig) (*Fixed, error) {
	n, err := resolvePositiveInt(KindFixed, "initial", cfg.Limit, DefaultFixedLimit)
	if err != nil {
		return nil, err
	}
	return &Fixed{limit: n}, nil
}

// Limit returns the configured limit.
func (f *Fixed) Limit() int { return f.limit }

// Update ignores the sample.
func (f *Fixed) Update(Sample) {}
