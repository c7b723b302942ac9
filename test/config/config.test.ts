import t from 'tap'
import { ConfigError, SETTINGS, defaultConfig, loadConfig, unknownVariables } from '../../src/config.js'

const MiB = 1024 * 1024

t.test('with an empty environment every setting has the SPEC default', async (t) => {
  const config = loadConfig({})
  t.equal(config.port, 8080)
  t.equal(config.host, null, 'HOST unset: the process picks 127.0.0.1 open, 0.0.0.0 with keys')
  t.equal(config.logLevel, 'info')
  t.equal(config.maxConcurrentTools, 8)
  t.equal(config.runTtlSeconds, 3600)
  t.equal(config.maxCallsPerBatch, 128)
  t.equal(config.maxExecutorResponseBytes, MiB)
  t.equal(config.bodyLimitBytes, MiB)
  t.equal(config.maxRuns, 100000)
  t.equal(config.receiptRetentionSeconds, 86400)
  t.equal(config.toolsFile, null)
  t.equal(config.apiKeysFile, null)
  t.equal(config.authorizerUrl, null)
  t.equal(config.metricsAuth, false)
  t.equal(config.store, 'memory')
})

t.test('every setting is read from its environment variable', async (t) => {
  const config = loadConfig({
    PORT: '9090',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'debug',
    TOOLGATE_TOOLS_FILE: '/etc/toolgate/tools.yaml',
    TOOLGATE_API_KEYS_FILE: '/etc/toolgate/keys.json',
    TOOLGATE_MAX_CONCURRENT_TOOLS: '16',
    TOOLGATE_RUN_TTL_SECONDS: '60',
    TOOLGATE_MAX_CALLS_PER_BATCH: '32',
    TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES: '2048',
    TOOLGATE_BODY_LIMIT_BYTES: '4096',
    TOOLGATE_MAX_RUNS: '10',
    TOOLGATE_RECEIPT_RETENTION_SECONDS: '0',
    TOOLGATE_AUTHORIZER_URL: 'http://opa:8181/v1/data/toolgate/allow',
    TOOLGATE_METRICS_AUTH: 'true'
  })
  t.equal(config.port, 9090)
  t.equal(config.host, '127.0.0.1')
  t.equal(config.logLevel, 'debug')
  t.equal(config.toolsFile, '/etc/toolgate/tools.yaml')
  t.equal(config.apiKeysFile, '/etc/toolgate/keys.json')
  t.equal(config.maxConcurrentTools, 16)
  t.equal(config.runTtlSeconds, 60)
  t.equal(config.maxCallsPerBatch, 32)
  t.equal(config.maxExecutorResponseBytes, 2048)
  t.equal(config.bodyLimitBytes, 4096)
  t.equal(config.maxRuns, 10)
  t.equal(config.receiptRetentionSeconds, 0)
  t.equal(config.authorizerUrl, 'http://opa:8181/v1/data/toolgate/allow')
  t.equal(config.metricsAuth, true)
})

t.test('an empty value counts as unset', async (t) => {
  const config = loadConfig({ PORT: '', TOOLGATE_MAX_RUNS: '', TOOLGATE_TOOLS_FILE: '' })
  t.equal(config.port, 8080)
  t.equal(config.maxRuns, 100000)
  t.equal(config.toolsFile, null)
})

t.test('the configuration is frozen', async (t) => {
  const config = loadConfig({})
  t.ok(Object.isFrozen(config))
  t.throws(() => { (config as { port: number }).port = 1 })
})

t.test('bad values are all reported at once, each naming its variable and the bad value', async (t) => {
  const env = {
    PORT: 'eighty',
    LOG_LEVEL: 'loud',
    TOOLGATE_MAX_CONCURRENT_TOOLS: '0',
    TOOLGATE_RUN_TTL_SECONDS: '-5',
    TOOLGATE_MAX_CALLS_PER_BATCH: '1.5',
    TOOLGATE_MAX_RUNS: '1e3',
    TOOLGATE_BODY_LIMIT_BYTES: '0x10',
    TOOLGATE_METRICS_AUTH: 'maybe',
    TOOLGATE_AUTHORIZER_URL: 'ftp://opa/allow',
    TOOLGATE_STORE: 'mongo'
  }
  let error: unknown
  try {
    loadConfig(env)
  } catch (err) {
    error = err
  }
  t.type(error, ConfigError)
  const problems = (error as ConfigError).problems
  t.equal(problems.length, Object.keys(env).length, 'one problem per bad variable')
  for (const [name, value] of Object.entries(env)) {
    const problem = problems.find((p) => p.startsWith(name + ' ') || p.includes(`${name} `))
    t.ok(problem, `${name} is reported`)
    t.match(problem ?? '', value, `the problem of ${name} shows the bad value`)
  }
  for (const p of problems) t.match((error as ConfigError).message, p, 'the message lists every problem')
})

t.test('integers outside their range are refused', async (t) => {
  const cases: Array<[string, string]> = [
    ['PORT', '65536'],
    ['PORT', '-1'],
    ['TOOLGATE_MAX_CONCURRENT_TOOLS', '257'],
    ['TOOLGATE_RUN_TTL_SECONDS', '0'],
    ['TOOLGATE_MAX_CALLS_PER_BATCH', '0'],
    ['TOOLGATE_MAX_RUNS', '0'],
    ['TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES', '0'],
    ['TOOLGATE_BODY_LIMIT_BYTES', 'lots'],
    ['TOOLGATE_RECEIPT_RETENTION_SECONDS', '-1'],
    ['TOOLGATE_MAX_RUNS', '99999999999999999999']
  ]
  for (const [name, value] of cases) {
    t.throws(() => loadConfig({ [name]: value }), ConfigError, `${name}=${value} is refused`)
  }
})

t.test('integers at the edges of their range are accepted', async (t) => {
  t.equal(loadConfig({ TOOLGATE_MAX_CONCURRENT_TOOLS: '1' }).maxConcurrentTools, 1)
  t.equal(loadConfig({ TOOLGATE_MAX_CONCURRENT_TOOLS: '256' }).maxConcurrentTools, 256)
  t.equal(loadConfig({ PORT: '0' }).port, 0)
  t.equal(loadConfig({ TOOLGATE_MAX_RUNS: '1' }).maxRuns, 1)
})

t.test('booleans accept the usual spellings', async (t) => {
  for (const v of ['true', 'TRUE', '1', 'yes', 'on']) t.equal(loadConfig({ TOOLGATE_METRICS_AUTH: v }).metricsAuth, true, v)
  for (const v of ['false', '0', 'no', 'off']) t.equal(loadConfig({ TOOLGATE_METRICS_AUTH: v }).metricsAuth, false, v)
})

t.test('a redis store URL is accepted', async (t) => {
  t.equal(loadConfig({ TOOLGATE_STORE: 'redis://localhost:6379' }).store, 'redis://localhost:6379')
  t.equal(loadConfig({ TOOLGATE_STORE: 'rediss://cache:6380/1' }).store, 'rediss://cache:6380/1')
})

t.test('every setting the SPEC names has an environment variable in the SETTINGS table', async (t) => {
  const envs = new Set<string>(Object.values(SETTINGS).map((s) => s.env))
  for (const name of ['PORT', 'HOST', 'LOG_LEVEL', 'TOOLGATE_TOOLS_FILE', 'TOOLGATE_API_KEYS_FILE', 'TOOLGATE_MAX_CONCURRENT_TOOLS',
    'TOOLGATE_RUN_TTL_SECONDS', 'TOOLGATE_MAX_CALLS_PER_BATCH', 'TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES', 'TOOLGATE_BODY_LIMIT_BYTES',
    'TOOLGATE_AUTHORIZER_URL', 'TOOLGATE_METRICS_AUTH', 'TOOLGATE_MAX_RUNS', 'TOOLGATE_RECEIPT_RETENTION_SECONDS']) {
    t.ok(envs.has(name), name)
  }
})

t.test('defaultConfig applies overrides on top of the defaults', async (t) => {
  const config = defaultConfig({ maxCallsPerBatch: 3 })
  t.equal(config.maxCallsPerBatch, 3)
  t.equal(config.port, 8080)
  t.ok(Object.isFrozen(config))
})

t.test('the loop limits default to the SPEC values and are read from their variables', async (t) => {
  t.match(defaultConfig(), { cycleAdvisoryRepetitions: 3, cycleTerminationRepetitions: 6, consecutiveErrorAdvisory: 3, consecutiveErrorTermination: 10, noProgressAdvisory: 10, noProgressTermination: 30 })
  const config = loadConfig({
    TOOLGATE_CYCLE_ADVISORY_REPETITIONS: '2',
    TOOLGATE_CYCLE_TERMINATION_REPETITIONS: '0',
    TOOLGATE_CONSECUTIVE_ERROR_ADVISORY: '4',
    TOOLGATE_CONSECUTIVE_ERROR_TERMINATION: '20',
    TOOLGATE_NO_PROGRESS_ADVISORY: '5',
    TOOLGATE_NO_PROGRESS_TERMINATION: '15'
  })
  t.match(config, { cycleAdvisoryRepetitions: 2, cycleTerminationRepetitions: 0, consecutiveErrorAdvisory: 4, consecutiveErrorTermination: 20, noProgressAdvisory: 5, noProgressTermination: 15 })
  t.throws(() => loadConfig({ TOOLGATE_NO_PROGRESS_TERMINATION: '-1' }), /TOOLGATE_NO_PROGRESS_TERMINATION must be an integer/)
})

t.test('a TOOLGATE_ variable that is no setting is warned about, with the closest setting named', async (t) => {
  const warnings = unknownVariables({
    TOOLGATE_MAX_CONCURENT_TOOLS: '4',
    TOOLGATE_API_KEY_FILE: 'keys.yaml',
    TOOLGATE_FROBNICATE: '1',
    TOOLGATE_TOOLS_FILE: 'tools.json',
    TOOLGATE_URL: 'http://127.0.0.1:8080',
    TOOLGATE_TEST_REDIS_URL: 'redis://127.0.0.1:6379',
    PATH: '/usr/bin'
  })
  t.strictSame(warnings, [
    'TOOLGATE_API_KEY_FILE is not a toolgate setting and is ignored (did you mean TOOLGATE_API_KEYS_FILE?)',
    'TOOLGATE_FROBNICATE is not a toolgate setting and is ignored',
    'TOOLGATE_MAX_CONCURENT_TOOLS is not a toolgate setting and is ignored (did you mean TOOLGATE_MAX_CONCURRENT_TOOLS?)'
  ])
  t.strictSame(unknownVariables(Object.fromEntries(Object.values(SETTINGS).map((s) => [s.env, 'x']))), [], 'every setting is known')
})
