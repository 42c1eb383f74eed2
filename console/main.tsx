import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { svc, ApiError, enc, type Me, type Schemas } from './api.ts';
import { BuildPage } from './build.tsx';
import { BuildsPage } from './builds.tsx';
import { CostPage } from './cost.tsx';
import { JobPage } from './job.tsx';
import { RacePage } from './race.tsx';
import { JobsPage } from './jobs.tsx';
import { WebhooksPage } from './org.tsx';
import { SchedulesPage } from './schedules.tsx';
import { EnvironmentsPage } from './environments.tsx';
import { EventsPage, ProjectPage, RunPage } from './project.tsx';
import { match, navigate, onLink, usePath } from './router.ts';
import { SignIn } from './signin.tsx';
import { ErrorNote } from './ui.tsx';
import { useAppBrand } from './branding.ts';

type Theme = 'light' | 'dark';
const initialTheme = (): Theme =>
  (localStorage.getItem('svc-theme') as Theme | null) ?? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');

function App() {
  const path = usePath();
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [theme, setTheme] = useState<Theme>(initialTheme);
  // Every org and project the caller may see (an administrator sees more than its memberships).
  const [orgs, setOrgs] = useState<Schemas['Org'][]>([]);
  const [projects, setProjects] = useState<Schemas['Project'][]>([]);
  // The project of the page shown; a job or build page learns it from the job or build.
  const [learnedProject, setLearnedProject] = useState<string | undefined>(undefined);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem('svc-theme', theme); // the theme only: never a token
  }, [theme]);
  const loadMe = () =>
    svc.GET('/auth/me').then(
      async (who) => {
        setMe(who);
        const [o, p] = await Promise.all([svc.GET('/orgs', { query: { limit: 100 } }), svc.GET('/projects', { query: { limit: 100 } })]).catch(() => [
          { data: [] },
          { data: [] },
        ]);
        setOrgs(o.data);
        setProjects(p.data);
      },
      (e) => {
        if (e instanceof ApiError && e.status === 401) setMe(null);
        else setError(e);
      },
    );
  useEffect(() => {
    // `/` jumps to the page's filter, as in most consoles.
    const key = (e: KeyboardEvent) => {
      const typing = (e.target as HTMLElement).closest('input, textarea, select');
      const search = document.querySelector<HTMLInputElement>('input[type=search]');
      if (e.key === '/' && !typing && search) {
        e.preventDefault();
        search.focus();
      }
    };
    window.addEventListener('keydown', key);
    return () => window.removeEventListener('keydown', key);
  }, []);
  useEffect(() => {
    void loadMe();
    const out = () => setMe(null);
    window.addEventListener('svc:signed-out', out);
    return () => window.removeEventListener('svc:signed-out', out);
  }, []);

  // Hooks run before any early return: the project shown, read off the path (a job or build page learns it).
  const pathProject = /^\/console\/projects\/([^/]+)/.exec(path)?.[1];
  const brand = useAppBrand(pathProject ? decodeURIComponent(pathProject) : /^\/console\/(jobs|builds)\//.test(path) ? learnedProject : undefined);

  if (me === undefined) return error ? <ErrorNote error={error} /> : <p class="muted">Loading…</p>;
  if (me === null || path.startsWith('/console/login')) return <SignIn onSignedIn={() => void loadMe()} />;

  const params = (pattern: string) => match(pattern, path);
  let projectId: string | undefined;
  let page;
  let pageOrg: string | undefined;
  let p;
  if ((p = params('/console/jobs/:job'))) {
    projectId = learnedProject;
    page = <JobPage jobId={p.job} onProject={setLearnedProject} />;
  } else if ((p = params('/console/jobs/:job/race'))) {
    projectId = learnedProject;
    page = <RacePage jobId={p.job} onProject={setLearnedProject} />;
  } else if ((p = params('/console/builds/:build'))) {
    projectId = learnedProject;
    page = <BuildPage buildId={p.build} me={me.user} projects={projects} onProject={setLearnedProject} />;
  } else if ((p = params('/console/projects/:project/jobs'))) page = <JobsPage projectId={(projectId = p.project)} />;
  else if ((p = params('/console/projects/:project/builds'))) page = <BuildsPage projectId={(projectId = p.project)} projects={projects} />;
  else if ((p = params('/console/projects/:project/events'))) page = <EventsPage projectId={(projectId = p.project)} />;
  else if ((p = params('/console/projects/:project/schedules'))) page = <SchedulesPage projectId={(projectId = p.project)} />;
  else if ((p = params('/console/projects/:project/environments'))) page = <EnvironmentsPage projectId={(projectId = p.project)} />;
  else if ((p = params('/console/projects/:project/runs/:run'))) page = <RunPage projectId={(projectId = p.project)} runId={p.run} />;
  else if ((p = params('/console/projects/:project'))) page = <ProjectPage projectId={(projectId = p.project)} />;
  else if ((p = params('/console/orgs/:org/webhooks'))) page = <WebhooksPage orgId={(pageOrg = p.org)} />;
  else if ((p = params('/console/orgs/:org/cost'))) page = <CostPage orgId={(pageOrg = p.org)} projects={projects} />;
  else page = <Home orgs={orgs} projects={projects} />;
  const orgId = pageOrg ?? projects.find((x) => x.id === projectId)?.org_id ?? orgs[0]?.id;

  return (
    <div class="shell" onClick={(e) => onLink(e as unknown as MouseEvent)}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/">
          svc
        </a>
        {brand && (
          <span class="app-brand" data-testid="app-brand" style={brand.color ? { borderColor: brand.color, color: brand.color } : undefined}>
            {brand.app_name}
          </span>
        )}
        <label class="switch">
          <span class="sr">Project</span>
          <select
            value={projectId ?? ''}
            onChange={(e) => {
              const id = (e.target as HTMLSelectElement).value;
              if (id) navigate(`/console/projects/${enc(id)}/jobs`);
            }}
          >
            <option value="">Choose a project…</option>
            {orgs.map((o) => (
              <optgroup key={o.id} label={o.name}>
                {projects
                  .filter((x) => x.org_id === o.id)
                  .map((x) => (
                    <option key={x.id} value={x.id}>
                      {x.name}
                    </option>
                  ))}
              </optgroup>
            ))}
          </select>
        </label>
        <nav>
          {projectId && <a href={`/console/projects/${enc(projectId)}/jobs`}>Jobs</a>}
          {projectId && <a href={`/console/projects/${enc(projectId)}`}>Pipelines</a>}
          {projectId && <a href={`/console/projects/${enc(projectId)}/builds`}>Builds</a>}
          {projectId && <a href={`/console/projects/${enc(projectId)}/events`}>Events</a>}
          {projectId && <a href={`/console/projects/${enc(projectId)}/environments`}>Environments</a>}
          {projectId && <a href={`/console/projects/${enc(projectId)}/schedules`}>Schedules</a>}
          {orgId && <a href={`/console/orgs/${enc(orgId)}/webhooks`}>Webhooks</a>}
          {orgId && <a href={`/console/orgs/${enc(orgId)}/cost`}>Cost</a>}
        </nav>
        <span class="who">{me.user.email}</span>
        <button onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')} aria-label="Switch theme">
          {theme === 'dark' ? '☀' : '☾'}
        </button>
        <button
          onClick={async () => {
            await svc.DELETE('/auth/console/session');
            setMe(null);
            navigate('/', true);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main">{page}</main>
    </div>
  );
}

function Home({ orgs, projects }: { orgs: Schemas['Org'][]; projects: Schemas['Project'][] }) {
  return (
    <>
      <h1>Projects</h1>
      {!projects.length && <p class="muted">No project yet: svc project create NAME --org ORG.</p>}
      {orgs.map((o) => (
        <section key={o.id}>
          <h2>
            {o.name} <a href={`/console/orgs/${enc(o.id)}/webhooks`}>webhooks</a> · <a href={`/console/orgs/${enc(o.id)}/cost`}>cost</a>
          </h2>
          <ul class="projects">
            {projects
              .filter((x) => x.org_id === o.id)
              .map((x) => (
                <li key={x.id}>
                  <a href={`/console/projects/${enc(x.id)}/jobs`}>{x.name}</a> · <a href={`/console/projects/${enc(x.id)}`}>pipelines</a> ·{' '}
                  <a href={`/console/projects/${enc(x.id)}/builds`}>builds</a>
                </li>
              ))}
          </ul>
        </section>
      ))}
    </>
  );
}

render(<App />, document.getElementById('app')!);
