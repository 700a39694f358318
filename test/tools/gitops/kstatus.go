package main

import (
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type kstatusResult struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

// kstatusOfObjects computes each object's status with the library Flux's
// health checks and `kpt live status` use.
func kstatusOfObjects(stdin io.Reader) ([]kstatusResult, error) {
	objects, err := readObjects(stdin)
	if err != nil {
		return nil, err
	}
	results := make([]kstatusResult, 0, len(objects))
	for _, obj := range objects {
		result, err := status.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			results = append(results, kstatusResult{Status: "Unknown", Error: err.Error()})
			continue
		}
		results = append(results, kstatusResult{Status: result.Status.String(), Message: result.Message})
	}
	return results, nil
}
