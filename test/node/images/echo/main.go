// Command echo is a tiny HTTP server for the tests of the real Node (listens on $PORT, default 8080):
//
//	GET /healthz         200 "ok" (the readiness probe)
//	GET /                {"hostname": …} (the Pod's name: which replica a Service routed to)
//	GET /serviceaccount  what the Pod's mounted ServiceAccount gives it: the namespace file, and the answer of the
//	                     apiserver (through the `kubernetes` Service, TLS verified with the mounted ca.crt) to a
//	                     SelfSubjectReview made with the mounted token.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	hostname, _ := os.Hostname()
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"hostname": hostname})
	})
	http.HandleFunc("/serviceaccount", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, serviceAccount())
	})
	server := &http.Server{Addr: ":" + port, ReadHeaderTimeout: 10 * time.Second}
	if err := server.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func writeJSON(w http.ResponseWriter, value any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(value)
}

func serviceAccount() map[string]any {
	result := map[string]any{}
	namespace, err := os.ReadFile(saDir + "/namespace")
	if err != nil {
		result["error"] = err.Error()
		return result
	}
	result["namespace"] = string(namespace)
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		result["error"] = err.Error()
		return result
	}
	caPEM, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		result["error"] = err.Error()
		return result
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		result["error"] = "ca.crt holds no certificate"
		return result
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	result["apiserver"] = net.JoinHostPort(host, port)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	request, _ := http.NewRequest("POST", "https://"+net.JoinHostPort(host, port)+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader(body))
	request.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	request.Header.Set("Content-Type", "application/json")
	response, err := client.Do(request)
	if err != nil {
		result["error"] = err.Error()
		return result
	}
	defer response.Body.Close()
	result["status"] = response.StatusCode
	var review struct {
		Status struct {
			UserInfo struct {
				Username string   `json:"username"`
				Groups   []string `json:"groups"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.NewDecoder(response.Body).Decode(&review); err == nil {
		result["username"] = review.Status.UserInfo.Username
		result["groups"] = review.Status.UserInfo.Groups
	}
	return result
}
