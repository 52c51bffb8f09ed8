import type { BuildOptions } from 'esbuild';
export declare const gatewayBuildOptions: (root: string, outfile: string) => BuildOptions;
