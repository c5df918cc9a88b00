/**
 * The admission decision, kept apart from HTTP: an AdmissionReview v1 in, an AdmissionReview
 * v1 out. This example's policy denies Pods that lack a required label (say `team`), the kind
 * of rule platform teams enforce so every workload has an owner.
 */

/** The parts of an `admission.k8s.io/v1` AdmissionReview request this webhook reads. */
export interface AdmissionReviewRequest {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly request: {
    readonly uid: string;
    readonly kind: { readonly group: string; readonly version: string; readonly kind: string };
    readonly operation: string;
    readonly namespace?: string;
    readonly object?: {
      readonly metadata?: {
        readonly name?: string;
        readonly generateName?: string;
        readonly labels?: Record<string, string>;
      };
    };
  };
}

export interface AdmissionReviewResponse {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly response: {
    readonly uid: string;
    readonly allowed: boolean;
    readonly status?: { readonly code: number; readonly message: string };
  };
}

/** Narrows an untrusted JSON body to an AdmissionReview v1 request, or undefined. */
export function parseAdmissionReview(body: unknown): AdmissionReviewRequest | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const review = body as Partial<AdmissionReviewRequest>;
  const request = review.request;
  if (review.apiVersion !== 'admission.k8s.io/v1' || review.kind !== 'AdmissionReview') return undefined;
  if (typeof request !== 'object' || request === null || typeof request.uid !== 'string') return undefined;
  return review as AdmissionReviewRequest;
}

/**
 * Allows a Pod that carries `requiredLabel` (non-empty), denies it otherwise; anything that is
 * not a Pod is allowed (the ValidatingWebhookConfiguration only sends Pods anyway).
 */
export function reviewPod(review: AdmissionReviewRequest, requiredLabel: string): AdmissionReviewResponse {
  const { uid, kind, object } = review.request;
  const labels = object?.metadata?.labels ?? {};
  const isPod = kind.group === '' && kind.kind === 'Pod';
  const allowed = !isPod || (labels[requiredLabel] ?? '') !== '';
  const name = object?.metadata?.name ?? object?.metadata?.generateName ?? '(unnamed)';
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: allowed
      ? { uid, allowed: true }
      : {
          uid,
          allowed: false,
          status: { code: 403, message: `pod ${name} must carry a non-empty "${requiredLabel}" label` },
        },
  };
}
