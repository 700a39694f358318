package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
)

// The health codes Argo CD accepts from a script; any other answer is shown as Unknown.
var healthCodes = map[string]bool{
	"Healthy": true, "Progressing": true, "Suspended": true, "Degraded": true, "Missing": true, "Unknown": true,
}

type health struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// Error is set when the script failed; Argo CD then shows the resource as Unknown with this message.
	Error string `json:"error,omitempty"`
}

func healthOfObjects(scriptPath string, stdin io.Reader) ([]health, error) {
	script, err := os.ReadFile(scriptPath)
	if err != nil {
		return nil, err
	}
	objects, err := readObjects(stdin)
	if err != nil {
		return nil, err
	}
	results := make([]health, 0, len(objects))
	for _, obj := range objects {
		h, err := runHealthScript(obj, string(script))
		if err != nil {
			h = health{Status: "Unknown", Error: err.Error()}
		}
		results = append(results, h)
	}
	return results, nil
}

// runHealthScript does what Argo CD's util/lua VM does for a health check: a
// state without the open libraries, then package, base and table opened, the
// json module preloaded, a one-second deadline, the object as global `obj`,
// and the returned table decoded through JSON into a health status.
func runHealthScript(obj map[string]any, script string) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return health{}, err
		}
	}
	luajson.Preload(l)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	ret := l.Get(-1)
	if ret.Type() != lua.LTTable {
		return health{}, fmt.Errorf("expect table output from Lua script, not %s", ret.Type())
	}
	encoded, err := luajson.Encode(ret)
	if err != nil {
		return health{}, err
	}
	var h health
	if err := json.Unmarshal(encoded, &h); err != nil {
		return health{}, err
	}
	if !healthCodes[h.Status] {
		return health{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return h, nil
}

// toLua converts a decoded JSON value the way Argo CD's decodeValue does: maps
// to tables with string keys, arrays to 1-based sequences, scalars as such.
func toLua(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := l.NewTable()
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.NewTable()
		for key, item := range v {
			t.RawSetString(key, toLua(l, item))
		}
		return t
	default:
		return lua.LString(fmt.Sprint(v))
	}
}
