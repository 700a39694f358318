// What a reconcile asks the runtime to do next, after kube-rs's `Action`.
export interface Action {
  /** Reconcile again after this many milliseconds; undefined waits for the next change. */
  readonly requeueAfterMs: number | undefined;
}

export const Action = {
  /** Nothing more to do until the object (or something it watches) changes. */
  done(): Action {
    return { requeueAfterMs: undefined };
  },
  /** Reconcile again after `ms`, e.g. to poll a platform operation. */
  requeueAfter(ms: number): Action {
    return { requeueAfterMs: Math.max(0, ms) };
  },
};
