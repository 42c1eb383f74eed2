import { svc, type Schemas } from './api.ts';
import { Action } from './ui.tsx';

type Deploy = Schemas['Deploy'];

const reviewerName = (r: Schemas['ProtectionReviewer']) => (r.user ? r.user : `group ${r.group}`);

/**
 * A deploy a protected environment holds for approval: who may approve it, the approvals so far, and
 * Approve / Reject. The server decides who is a reviewer (a user listed, or a member of a listed
 * group): anyone else's click answers its 403, shown beside the button.
 */
export function DeployReview({ projectId, env, deploy, onDone }: { projectId: string; env: string; deploy: Deploy; onDone: () => void }) {
  const params = { project_id: projectId, env, deploy_id: deploy.id };
  const reviewers = deploy.protection?.required_reviewers ?? [];
  const approvals = deploy.reviews.filter((r) => r.decision === 'approved').length;
  const required = deploy.protection?.required_approvals ?? 1;
  return (
    <div class="review" aria-label={`Review of ${deploy.id}`}>
      <p class="muted">
        Awaiting approval ({approvals} of {required}) by {reviewers.map(reviewerName).join(', ')}
      </p>
      <Action
        label="Approve"
        kind="primary"
        run={async () => {
          await svc.POST('/projects/{project_id}/environments/{env}/deploys/{deploy_id}/approve', { params, body: {} });
          onDone();
        }}
      />
      <Action
        label="Reject"
        kind="danger"
        confirm={`Reject deploy ${deploy.id} to ${env}? It will not run.`}
        run={async () => {
          await svc.POST('/projects/{project_id}/environments/{env}/deploys/{deploy_id}/reject', { params, body: {} });
          onDone();
        }}
      />
    </div>
  );
}
