import { useEffect, useState } from 'preact/hooks';
import { svc } from './api.ts';

export interface AppBrand {
  app_name: string;
  /** Only a #rgb / #rrggbb value: it goes into a style. */
  color: string | null;
}

const COLOR = /^#(?:[0-9a-fA-F]{3}){1,2}$/;

/**
 * The branding (x-svc.branding) of the project shown, when it is an app with sign-in, from its
 * public settings (GET /auth/apps/{project_id}/config; 404 for a project that is not an app: none).
 * It names the page (document title) too.
 */
export function useAppBrand(projectId: string | undefined): AppBrand | null {
  const [brand, setBrand] = useState<AppBrand | null>(null);
  useEffect(() => {
    let live = true;
    setBrand(null);
    if (projectId)
      svc.GET('/auth/apps/{project_id}/config', { params: { project_id: projectId } }).then(
        ({ branding }) => {
          if (live)
            setBrand({ app_name: branding.app_name, color: branding.primary_color && COLOR.test(branding.primary_color) ? branding.primary_color : null });
        },
        () => {},
      );
    return () => {
      live = false;
    };
  }, [projectId]);
  useEffect(() => {
    document.title = brand ? `${brand.app_name} · svc console` : 'svc console';
  }, [brand]);
  return brand;
}
