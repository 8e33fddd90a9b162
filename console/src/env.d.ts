// Side-effect imports of stylesheets, which Vite bundles.
declare module '*.css';
