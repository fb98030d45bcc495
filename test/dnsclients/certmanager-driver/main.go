// Command certmanager-driver is cert-manager's own DNS01 webhook client (package
// github.com/cert-manager/cert-manager/pkg/issuer/acme/dns/webhook) in a small test driver: it reads
// challenges as a JSON array on stdin, runs them all concurrently through the Kubernetes API server
// named by --kubeconfig (which proxies them to the solver's APIService), and prints one JSON line per
// challenge: {"index":…,"error":"…","ms":…}. An empty error means cert-manager saw success.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cert-manager/cert-manager/pkg/acme/webhook/apis/acme/v1alpha1"
	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	"github.com/cert-manager/cert-manager/pkg/issuer/acme/dns/webhook"
)

type challenge struct {
	Action       string          `json:"action"` // "Present" or "CleanUp"
	DNSName      string          `json:"dnsName"`
	Key          string          `json:"key"`
	ResolvedFQDN string          `json:"resolvedFQDN"`
	ResolvedZone string          `json:"resolvedZone"`
	Namespace    string          `json:"namespace"`
	Config       json.RawMessage `json:"config,omitempty"`
}

type result struct {
	Index int     `json:"index"`
	Error string  `json:"error"`
	Ms    float64 `json:"ms"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server to call through")
	group := flag.String("group", "webhook.dns.polycrate.io", "groupName of the solver")
	solver := flag.String("solver", "polycrate", "solverName of the solver")
	flag.Parse()

	restConfig, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(2)
	}
	var challenges []challenge
	if err := json.NewDecoder(os.Stdin).Decode(&challenges); err != nil {
		fmt.Fprintln(os.Stderr, "stdin:", err)
		os.Exit(2)
	}
	client := &webhook.Webhook{}
	if err := client.Initialize(restConfig, make(chan struct{})); err != nil {
		fmt.Fprintln(os.Stderr, "initialize:", err)
		os.Exit(2)
	}

	results := make([]result, len(challenges))
	var wg sync.WaitGroup
	for i, c := range challenges {
		wg.Add(1)
		go func(i int, c challenge) {
			defer wg.Done()
			stanza := cmacme.ACMEIssuerDNS01ProviderWebhook{GroupName: *group, SolverName: *solver}
			if len(c.Config) > 0 {
				stanza.Config = &apiextensionsv1.JSON{Raw: c.Config}
			}
			raw, _ := json.Marshal(stanza)
			req := &v1alpha1.ChallengeRequest{
				Type:              "dns-01",
				DNSName:           c.DNSName,
				Key:               c.Key,
				ResourceNamespace: c.Namespace,
				ResolvedFQDN:      c.ResolvedFQDN,
				ResolvedZone:      c.ResolvedZone,
				Config:            &apiextensionsv1.JSON{Raw: raw},
			}
			start := time.Now()
			var err error
			if c.Action == "CleanUp" {
				err = client.CleanUp(req)
			} else {
				err = client.Present(req)
			}
			results[i] = result{Index: i, Ms: float64(time.Since(start).Microseconds()) / 1000}
			if err != nil {
				results[i].Error = err.Error()
			}
		}(i, c)
	}
	wg.Wait()
	out := json.NewEncoder(os.Stdout)
	for _, r := range results {
		_ = out.Encode(r)
	}
}
