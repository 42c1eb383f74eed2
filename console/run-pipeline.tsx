import { useState } from 'preact/hooks';
import { svc, enc } from './api.ts';
import { navigate } from './router.ts';
import { Action, ErrorNote } from './ui.tsx';

/** A declared pipeline input (docs/pipelines.md, "Declared inputs"). */
interface InputDeclaration {
  required?: boolean;
  default?: string;
  description?: string;
}
type Declarations = Record<string, InputDeclaration>;

/**
 * A pipeline's Run button. A pipeline that declares no inputs starts at once; one that does first
 * shows a form of them (read from `GET /projects/{id}/pipelines/{name}`, in the manifest's order):
 * defaults filled in, required ones marked and needed before the form submits.
 */
export function RunPipeline({ projectId, name, declares }: { projectId: string; name: string; declares: boolean }) {
  const [declared, setDeclared] = useState<Declarations | null>(null);
  const start = async (inputs?: Record<string, string>) => {
    const run = await svc.POST('/projects/{project_id}/pipelines/{name}/run', { params: { project_id: projectId, name }, body: inputs ? { inputs } : {} });
    navigate(`/console/projects/${enc(projectId)}/runs/${enc(run.id)}`);
  };
  if (declared) return <InputsForm name={name} declared={declared} start={start} close={() => setDeclared(null)} />;
  return (
    <Action
      label={`Run ${name}`}
      kind="primary"
      run={async () => {
        if (!declares) return start();
        const def = await svc.GET('/projects/{project_id}/pipelines/{name}', { params: { project_id: projectId, name } });
        if (!def.inputs || Object.keys(def.inputs).length === 0) return start();
        setDeclared(def.inputs as Declarations); // the manifest's own model: free-form in the API
      }}
    />
  );
}

function InputsForm({
  name,
  declared,
  start,
  close,
}: {
  name: string;
  declared: Declarations;
  start: (inputs: Record<string, string>) => Promise<void>;
  close: () => void;
}) {
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(Object.entries(declared).map(([k, d]) => [k, d.default ?? ''])));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const id = (input: string) => `run-${name}-${input}`;
  return (
    <form
      class="run-inputs"
      aria-label={`Inputs of ${name}`}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          // An emptied optional field is left out: the pipeline's default (or nothing) applies, as for a run given no such input.
          await start(Object.fromEntries(Object.entries(values).filter(([, v]) => v !== '')));
        } catch (err) {
          setError(err);
          setBusy(false);
        }
      }}
    >
      {Object.entries(declared).map(([input, d]) => (
        <div class="run-input" key={input} data-input={input}>
          <label for={id(input)}>
            <span class="mono">{input}</span>
            {d.required && (
              <abbr class="required" title="required">
                {' '}
                *
              </abbr>
            )}
            {d.description && <span class="muted"> — {d.description}</span>}
          </label>
          <input
            id={id(input)}
            value={values[input]}
            required={d.required === true}
            placeholder={d.default === undefined ? undefined : `default: ${d.default}`}
            onInput={(e) => setValues({ ...values, [input]: (e.target as HTMLInputElement).value })}
          />
        </div>
      ))}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          Start run
        </button>
        <button type="button" onClick={close}>
          Cancel
        </button>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}
