package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
	"github.com/neuronfabric/nfabric/usage"
)

// TestSelfTestServer: a server on a temporary socket passes the six
// self-test checks, and the report says so line by line.
func TestSelfTestServer(t *testing.T) {
	rep, err := client.SelfTestServer(context.Background(), serve.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 6 || rep.Failed != 0 || len(rep.Checks) != 6 || rep.Err() != nil {
		t.Fatalf("report %+v", rep)
	}
	text := rep.Text()
	if strings.Count(text, "\nok ")+strings.Count(text[:3], "ok ") != 6 || !strings.HasSuffix(text, "6 passed, 0 failed\n") {
		t.Errorf("text:\n%s", text)
	}
}

// TestCheckServerUsage: a bad endpoint or TLS file is a usage error
// before anything dials.
func TestCheckServerUsage(t *testing.T) {
	for _, c := range []client.CheckConfig{
		{Endpoint: serve.Endpoint{TCP: "bogus"}},
		{Endpoint: serve.Endpoint{TCP: "127.0.0.1:1"}, TLSCert: "only-a-cert.pem"},
	} {
		if _, err := client.CheckServer(context.Background(), c); !usage.Is(err) {
			t.Errorf("%+v: %v; want a usage error", c, err)
		}
	}
}
