import type { BuildOptions } from 'esbuild';
export declare const buildOptions: (root: string, entry: string, outfile: string) => BuildOptions;
