// Hash routes (#/projects/<id>?filter=…): every page and selection has a link that can be shared or
// bookmarked, and the server needs to answer only `/`.
import { useEffect, useState } from 'preact/hooks';

export type Route = { path: string[]; params: URLSearchParams };

function parseHash(hash: string): Route {
  const text = hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = text.split('?', 2) as [string?, string?];
  return { path: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query) };
}

export function href(path: string[], params: Record<string, string | undefined | null> = {}): string {
  const query = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => Boolean(entry[1]))).toString();
  return `#/${path.map(encodeURIComponent).join('/')}${query ? `?${query}` : ''}`;
}

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  // pushState fires no hashchange: tell the listeners ourselves.
  window.dispatchEvent(new HashChangeEvent('hashchange'));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseHash(location.hash));
    window.addEventListener('hashchange', update);
    window.addEventListener('popstate', update);
    return () => {
      window.removeEventListener('hashchange', update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}
