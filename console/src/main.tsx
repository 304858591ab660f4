import { render } from 'preact';
import { App } from './app.tsx';

// The views put the list back where it was themselves (SplitView), after their entry closes.
history.scrollRestoration = 'manual';
render(<App />, document.getElementById('app')!);
