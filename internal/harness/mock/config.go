package mock

import (
	"github.com/sluice-gw/sluice/internal/config/upstreamscript"
	"github.com/sluice-gw/sluice/internal/model/upstream"
)

// The behaviour a mock serves is the upstream model's (package
// upstream), which the simulator plays too. These names let a test
// configure a mock without importing the model: mock.Config{TTFT: ...}.
type (
	Config     = upstream.Config
	Jitter     = upstream.Jitter
	TokenRange = upstream.TokenRange
	Brownout   = upstream.Brownout
	Failure    = upstream.Failure
	Answer     = upstream.Answer
)

// Failure kinds (upstream.FailStatus and the rest).
const (
	FailStatus    = upstream.FailStatus
	FailReset     = upstream.FailReset
	FailHang      = upstream.FailHang
	FailMalformed = upstream.FailMalformed
	FailTruncate  = upstream.FailTruncate

	FailStall         = upstream.FailStall
	FailEOF           = upstream.FailEOF
	FailNoDone        = upstream.FailNoDone
	FailContextLength = upstream.FailContextLength
	FailContentFilter = upstream.FailContentFilter
)

// DefaultConfig is the demo provider (upstream.DefaultConfig).
func DefaultConfig() Config { return upstream.DefaultConfig() }

// ParseScript parses a YAML behaviour script (upstream.ParseScript).
func ParseScript(data []byte) (Config, error) { return upstreamscript.ParseScript(data) }
