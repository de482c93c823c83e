package server

import (
	"strings"
	"testing"
)

// TestRotateSecrets_Route: POST /v1/secrets/rotate is an admin operation
// that encrypts a connection's secret again; its answer, the stored
// definition and the log never hold the secret.
func TestRotateSecrets_Route(t *testing.T) {
	f := newFixture(t, fixtureOpts{tokens: []Token{
		{Name: "ops", Token: "ops-token-Kq3-long", Role: RoleOperator},
		{Name: "root", Token: "root-token-Zp8-long", Role: RoleAdmin},
	}})
	admin := []string{"Authorization", "Bearer root-token-Zp8-long"}
	spec := `{"name":"warehouse","type":"mysql","options":{"host":"127.0.0.1","port":1,"user":"u","password":"` + knownSecret + `","database":"d"}}`
	f.must(201, "POST", "/v1/connections", spec, admin...)
	f.wantProblem(403, "forbidden", "", "POST", "/v1/secrets/rotate", "", "Authorization", "Bearer ops-token-Kq3-long")
	var rep struct {
		KeyID       string `json:"key_id"`
		Secrets     int    `json:"secrets"`
		Connections int    `json:"connections"`
	}
	f.must(200, "POST", "/v1/secrets/rotate", "", admin...).json(t, &rep)
	if len(rep.KeyID) != 8 || rep.Secrets != 0 || rep.Connections != 0 {
		t.Fatalf("rotate: %+v (the connection was stored with the first key already)", rep)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "secrets rotated") || !strings.Contains(logs, "token=root") {
		t.Errorf("no log line of the rotation:\n%s", logs)
	}
}
