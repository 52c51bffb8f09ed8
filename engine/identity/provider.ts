// The school's identity provider (OpenID Connect, through openid-client): turns a callback into a verified identity
// or refuses it, knowing nothing of wallets or pages. An identity is the provider's subject, or with
// GATEWAY_OIDC_MATCH=email a lower-cased address accepted only when the provider says it is verified.
import * as oidc from 'openid-client';
import { SettingError } from '../core/setting-error.ts';

export type MatchBy = 'subject' | 'email';

export interface ProviderSettings {
  issuer: URL;
  clientId: string;
  clientSecret: string;
  matchBy: MatchBy;
  /** What the sign-in button calls the provider ("Sign in with …"). */
  name: string;
  /** GATEWAY_OIDC_SIGN_OUT=provider: signing out of the dashboard also ends the provider's session, where it offers that. */
  signOutAtProvider: boolean;
}

/** What the browser must bring back to the callback; kept in a sealed cookie between the two (oidc-flow-cookie.ts). */
export interface FlowSecrets {
  state: string;
  nonce: string;
  verifier: string;
}

export interface Identity {
  issuer: string;
  subject: string;
  email: string | null;
  /** The value wallets' owner ids and manager rows are compared with (see the header comment). */
  key: string;
}

/** Why a sign-in was refused; the dashboard says each in the page's language (its catalogs' `oidc.refused.*`). */
type RefusalCode = 'unreachable' | 'answer' | 'no_id_token' | 'no_email' | 'email_unverified';

/**
 * The provider's answer did not check out, or names nobody: no session. The message is English, for the log;
 * the person signing in is told by `code`, with `detail` (openid-client's reason, or the address) kept as is.
 */
export class SignInRefused extends Error {
  override name = 'SignInRefused';
  constructor(
    readonly code: RefusalCode,
    message: string,
    readonly detail = '',
  ) {
    super(message);
  }
}

const NAMES = ['GATEWAY_OIDC_ISSUER', 'GATEWAY_OIDC_CLIENT_ID', 'GATEWAY_OIDC_CLIENT_SECRET'] as const;

/** The settings, or null when no provider is configured; half a configuration stops the start, naming what is missing. */
export function providerSettings(env: Record<string, string | undefined>): ProviderSettings | null {
  const set = NAMES.filter((n) => (env[n] ?? '') !== '');
  if (set.length === 0) return null;
  if (set.length < NAMES.length) {
    throw new SettingError(
      `sign-in with an identity provider needs ${NAMES.join(', ')}; missing: ${NAMES.filter((n) => !set.includes(n)).join(', ')}`,
    );
  }
  let issuer: URL;
  try {
    issuer = new URL(env.GATEWAY_OIDC_ISSUER!);
  } catch {
    throw new SettingError(
      `GATEWAY_OIDC_ISSUER must be a URL (the provider's issuer, e.g. https://login.example.edu/realms/school); got '${env.GATEWAY_OIDC_ISSUER}'`,
    );
  }
  if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && isLoopback(issuer))) {
    throw new SettingError(
      'GATEWAY_OIDC_ISSUER must be https (plain http only for a provider on this machine: localhost, 127.0.0.1, [::1])',
    );
  }
  const signOut = env.GATEWAY_OIDC_SIGN_OUT || 'gateway';
  if (signOut !== 'gateway' && signOut !== 'provider')
    throw new SettingError(`GATEWAY_OIDC_SIGN_OUT must be gateway or provider; got '${signOut}'`);
  const match = env.GATEWAY_OIDC_MATCH || 'subject';
  if (match !== 'subject' && match !== 'email') throw new SettingError(`GATEWAY_OIDC_MATCH must be subject or email; got '${match}'`);
  return {
    issuer,
    clientId: env.GATEWAY_OIDC_CLIENT_ID!,
    clientSecret: env.GATEWAY_OIDC_CLIENT_SECRET!,
    matchBy: match,
    name: env.GATEWAY_OIDC_NAME || issuer.host,
    signOutAtProvider: signOut === 'provider',
  };
}

function isLoopback(u: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);
}

/** What a refusal says about a failed check, in words, with openid-client's reason for the operator. */
function refusalOf(e: unknown): SignInRefused {
  // openid-client says "invalid response encountered" and keeps the check that failed in its cause.
  const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : '';
  const reason = e instanceof Error ? `${e.message}${cause}` : String(e);
  return new SignInRefused(
    'answer',
    `The identity provider's answer did not check out, so you were not signed in (${reason}). Start the sign-in again.`,
    reason,
  );
}

export class IdentityProvider {
  private configuration: Promise<oidc.Configuration> | null = null;

  constructor(readonly settings: ProviderSettings) {}

  /**
   * The provider's metadata, discovered once and kept (openid-client keeps its signing keys fresh itself). A
   * failed discovery is not kept, so a provider that was down is tried again at the next sign-in. Discovery
   * refuses metadata whose issuer is not exactly the configured one.
   */
  private config(): Promise<oidc.Configuration> {
    if (!this.configuration) {
      const { issuer, clientId, clientSecret } = this.settings;
      const insecure = issuer.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : undefined;
      this.configuration = oidc
        .discovery(issuer, clientId, undefined, oidc.ClientSecretBasic(clientSecret), insecure)
        .catch((e: unknown) => {
          this.configuration = null;
          throw e;
        });
    }
    return this.configuration;
  }

  /** The provider's address to send the browser to, and the secrets its answer must match. */
  async begin(redirectUri: string): Promise<{ url: URL; secrets: FlowSecrets }> {
    let config: oidc.Configuration;
    try {
      config = await this.config();
    } catch (e) {
      const reason = (e as Error).message;
      throw new SignInRefused(
        'unreachable',
        `The identity provider could not be reached or did not describe itself as ${this.settings.issuer.href} (${reason}). Try again later, or tell your operator.`,
        reason,
      );
    }
    const secrets: FlowSecrets = { state: oidc.randomState(), nonce: oidc.randomNonce(), verifier: oidc.randomPKCECodeVerifier() };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.settings.matchBy === 'email' ? 'openid email' : 'openid',
      response_type: 'code',
      state: secrets.state,
      nonce: secrets.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(secrets.verifier),
      code_challenge_method: 'S256',
    });
    return { url, secrets };
  }

  /**
   * Checks the callback (`callbackUrl`: the redirect URI with the query the browser brought) against the flow's
   * secrets: state, the code's PKCE verifier, the ID token's signature, issuer, audience and nonce. Returns who
   * signed in, or throws SignInRefused.
   */
  async finish(callbackUrl: URL, secrets: FlowSecrets): Promise<Identity> {
    const config = await this.config().catch((e: unknown) => {
      throw refusalOf(e);
    });
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        expectedState: secrets.state,
        expectedNonce: secrets.nonce,
        pkceCodeVerifier: secrets.verifier,
        idTokenExpected: true,
      });
    } catch (e) {
      throw refusalOf(e);
    }
    const claims = tokens.claims();
    if (!claims) throw new SignInRefused('no_id_token', 'The identity provider did not say who you are (no ID token). Tell your operator.');
    let email = typeof claims.email === 'string' ? claims.email : null;
    let verified = claims.email_verified === true;
    if (this.settings.matchBy === 'email' && email === null) {
      // Providers that keep scope claims out of the ID token give them at userinfo, for the same subject.
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub).catch((e: unknown) => {
        throw refusalOf(e);
      });
      email = typeof info.email === 'string' ? info.email : null;
      verified = info.email_verified === true;
    }
    const identity = { issuer: claims.iss, subject: claims.sub, email };
    if (this.settings.matchBy === 'subject') return { ...identity, key: claims.sub };
    if (email === null)
      throw new SignInRefused(
        'no_email',
        'The identity provider did not give your e-mail address, which this gateway signs people in by. Tell your operator.',
      );
    if (!verified)
      throw new SignInRefused(
        'email_unverified',
        `The identity provider has not verified the e-mail address ${email}, so it cannot sign you in. Verify it with your school's account first.`,
        email,
      );
    return { ...identity, key: email.toLowerCase() };
  }

  /**
   * Where to send the browser after the dashboard's own sign-out, to end the provider's session too: its
   * end_session_endpoint (RP-initiated logout), coming back to `backTo` (which the operator registers at the
   * provider as a post-logout redirect URI). Null when the operator did not ask for it, or the provider offers
   * no such endpoint or cannot be reached: the dashboard's sign-out stands on its own either way.
   */
  async endSessionUrl(backTo: string): Promise<URL | null> {
    if (!this.settings.signOutAtProvider) return null;
    const config = await this.config().catch(() => null);
    if (!config?.serverMetadata().end_session_endpoint) return null;
    return oidc.buildEndSessionUrl(config, { client_id: this.settings.clientId, post_logout_redirect_uri: backTo });
  }
}
